package cpuops

import (
	"unsafe"

	"stoke/gemm"
)

// The im2col matrix of one sample, (Cin·K·K) × (H·W), is never stored:
// the GEMMs read it through gemm.Panels, which write each block straight
// into the packed layout the micro-kernel reads. Row r = (ci, ky, kx) of
// the matrix is input plane ci shifted by (ky−K/2, kx−K/2), zero outside.

// tap is one row of the im2col matrix: where its values come from. For an
// output pixel (y, x) it reads plane[(y+dy)·W + x+dx], i.e. the input at
// pixel index + off, when that lies inside the plane.
type tap struct{ plane, dy, dx, off int }

// makeTaps lists the rows (ci, ky, kx) of the im2col matrix of a
// (planes, H, W) input.
func makeTaps(planes, H, W, K int) []tap {
	p := K / 2
	taps := make([]tap, 0, planes*K*K)
	for ci := 0; ci < planes; ci++ {
		for ky := 0; ky < K; ky++ {
			for kx := 0; kx < K; kx++ {
				taps = append(taps, tap{ci * H * W, ky - p, kx - p, ci*H*W + (ky-p)*W + kx - p})
			}
		}
	}
	return taps
}

// colPanels is op(B) = col, the im2col matrix of one sample x: k runs over
// taps, n over output pixels (the forward GEMM w·col).
type colPanels struct {
	taps []tap
	H, W int
	x    []float32
}

func (s *colPanels) PackB(dst []float32, pc, jc, kb, nb int) {
	x, H, W := s.x, s.H, s.W
	const nr = gemm.NR
	for jr := 0; jr < nb; jr += nr {
		nn := min(nr, nb-jr)
		panel := dst[jr*kb : jr*kb+kb*nr]
		pix := jc + jr
		oy, ox := pix/W, pix%W
		if nn == nr && ox+nr <= W { // the panel's pixels lie in one output row
			for q := 0; q < kb; q++ {
				t := s.taps[pc+q]
				d := (*[nr]float32)(panel[q*nr : q*nr+nr])
				iy, ix := oy+t.dy, ox+t.dx
				if iy < 0 || iy >= H {
					*d = [nr]float32{}
					continue
				}
				row := x[t.plane+iy*W : t.plane+iy*W+W]
				if ix >= 0 && ix+nr <= W {
					*d = *(*[nr]float32)(row[ix:])
					continue
				}
				// Off the row's left or right end: the part inside, copied,
				// zeros around it.
				lo, hi := max(0, -ix), min(nr, W-ix)
				*d = [nr]float32{}
				if lo < hi {
					copy(d[lo:hi], row[ix+lo:ix+hi])
				}
			}
			continue
		}
		for q := 0; q < kb; q++ {
			t := s.taps[pc+q]
			d := panel[q*nr : q*nr+nr]
			for j := range d {
				d[j] = 0
				if j >= nn {
					continue
				}
				py, px := (pix+j)/W+t.dy, (pix+j)%W+t.dx
				if py >= 0 && py < H && px >= 0 && px < W {
					d[j] = x[t.plane+py*W+px]
				}
			}
		}
	}
}

// colTPanels is op(B) = colᵀ: k runs over output pixels, n over taps (the
// filter-gradient GEMM dy·colᵀ).
type colTPanels struct {
	c *Conv
	x []float32
}

func (s *colTPanels) PackB(dst []float32, pc, jc, kb, nb int) {
	c, x := s.c, s.x
	H, W, p := c.H, c.W, c.K/2
	const nr = gemm.NR
	for jr := 0; jr < nb; jr += nr {
		nn := min(nr, nb-jr)
		panel := dst[jr*kb : jr*kb+kb*nr]
		taps := c.taps[jc+jr : jc+jr+nn]
		var offs [nr]int
		var offs32 [nr]int32
		for j, t := range taps {
			offs[j], offs32[j] = t.off, int32(t.off)
		}
		// One pixel per panel row: nr gathers at fixed offsets, one
		// contiguous store. Pixels at least K/2 from every border read
		// inside the planes whatever the tap: for them the gather reads
		// unchecked (x[pix+off] is in range by that argument). With
		// AVX-512, one VGATHERDPS a row, over the run of such pixels in
		// the image row (offsets as int32: x under 2³¹ values).
		base := unsafe.Pointer(unsafe.SliceData(x))
		gather := useAVX512 && nn == nr && len(x) < 1<<31
		for q := 0; q < kb; q++ {
			pix := pc + q
			oy, ox := pix/W, pix%W
			d := (*[nr]float32)(panel[q*nr : q*nr+nr])
			if nn == nr && oy >= p && oy < H-p && ox >= p && ox < W-p {
				if gather {
					run := min(kb-q, W-p-ox)
					gatherRows16AVX512(&d[0], (*float32)(unsafe.Add(base, 4*pix)), &offs32, run)
					q += run - 1
					continue
				}
				for j, off := range offs {
					d[j] = *(*float32)(unsafe.Add(base, 4*(pix+off)))
				}
				continue
			}
			*d = [nr]float32{}
			for j, t := range taps {
				if iy, ix := oy+t.dy, ox+t.dx; iy >= 0 && iy < H && ix >= 0 && ix < W {
					d[j] = x[pix+t.off]
				}
			}
		}
	}
}
