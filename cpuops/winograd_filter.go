package cpuops

import (
	"fmt"

	"stoke/gemm"
)

// The filter gradient by F(2x2, 3x3). Forward's Y = Aᵀ [Σ_ci V ⊙ U] A is
// linear in V = G g Gᵀ, so its transpose gives
//
//	dw[co][ci] = Gᵀ [ Σ_tiles DY ⊙ U ] G,   DY = A dy Aᵀ (4x4 from a 2x2 tile of dy),
//
// and Σ_tiles is, per position ξ, a GEMM with the batch's tiles as its
// depth: dVᵀ[ξ] (Cin × Cout) = U[ξ] (Cin × tiles) · DY[ξ]ᵀ (tiles × Cout),
// 2.25 times fewer multiply-adds than the im2col GEMM's. U is Forward's
// input transform (winoIn, or winoInG on narrow planes); DY is written by winoDy
// with 16 output channels in the lanes, straight into the NR-column
// panels the GEMM takes for B. The batch goes through in chunks of
// winoFilterTiles tiles, whose products are added in chunk order (beta 1
// after the first), each position's GEMM on one worker: the bits do not
// depend on the core count. winoDw turns dVᵀ into dw.

// winoFilterTiles is about the most tiles a chunk of samples holds: its U
// and DY, 16·(Cin + Cout) floats a tile, stay in L3, and up to 128 input
// channels U[ξ] (the GEMM's packed A, Cin × tiles) is small enough for the
// direct kernels, which read DY's panels where they lie (gemm.RunPanels).
var winoFilterTiles = 2048

// backwardFilterWinograd is BackwardFilter by F(2x2, 3x3).
func (c *Conv2d) backwardFilterWinograd(x, dy, dw []float32) {
	p := c.wino
	cin, cp := c.Cin, p.cp
	ld := p.chunk * p.tiles
	c.x, c.dy = x, dy
	c.winoU = c.sharedBuf(&c.ownWinoU, func(s *Conv2dShared) *[]float32 { return &s.winoU }, 16*cin*ld)
	c.winoDY = c.sharedBuf(&c.ownWinoDY, func(s *Conv2dShared) *[]float32 { return &s.winoDY }, 16*cp*ld)
	c.winoV = c.sharedBuf(&c.ownWinoV, func(s *Conv2dShared) *[]float32 { return &s.winoV }, 16*cin*cp)
	for c0 := 0; c0 < c.B; c0 += p.chunk {
		c.winoC0, c.winoC1 = c0, min(c.B, c0+p.chunk)
		p.fjob.n = (c.winoC1 - c0 + p.fper - 1) / p.fper
		p.fjob.run(c.start(p.fjob.n))
		c.winoBeta = 0
		if c0 > 0 {
			c.winoBeta = 1
		}
		p.gjob.run(c.start(p.gjob.n))
	}
	c.dw = dw
	p.ojob.run(workers(p.ojob.n))
	c.x, c.dy, c.dw, c.winoU, c.winoDY, c.winoV = nil, nil, nil, nil, nil, nil
}

// winoFilterIn is the item of a chunk's transforms for its samples
// [fper·i, fper·i + fper): the input's tiles into U, dy's into the DY
// panels.
func (c *Conv2d) winoFilterIn(worker, i int) {
	p := c.wino
	b0 := c.winoC0 + i*p.fper
	b1 := min(c.winoC1, b0+p.fper)
	s := &c.scratch[worker]
	src, _ := c.padded(s, b0, b1)
	cout, cp := c.Cout, p.cp
	ld := p.chunk * p.tiles
	half, t0 := c.W/2, (b0-c.winoC0)*p.tiles
	c.winoInput(c.winoU[t0:], ld, src, b1-b0)
	ohw := c.H * c.W
	for b := b0; b < b1; b++ {
		d := c.dy[b*cout*ohw : (b+1)*cout*ohw]
		t := t0 + (b-b0)*p.tiles
		for co := 0; co < cp; co += 16 {
			at := co/gemm.NR*ld*gemm.NR + co%gemm.NR + t*gemm.NR
			var src []float32
			if co < cout {
				src = d[co*ohw:]
			}
			winoDy(c.winoDY[at:], cp*ld, src, ohw, c.W, half, c.H/2, min(16, max(0, cout-co)))
		}
	}
}

// winoFilterGemm is the chunk's GEMM at position xi: dVᵀ[xi] (+)= U[xi] ·
// DY[xi]ᵀ.
func (c *Conv2d) winoFilterGemm(worker, xi int) {
	p := c.wino
	cin, cp := c.Cin, p.cp
	ld := p.chunk * p.tiles
	k := (c.winoC1 - c.winoC0) * p.tiles
	s := &c.scratch[worker]
	s.wDY = winoDYPanels{src: c.winoDY[xi*cp*ld : (xi+1)*cp*ld], rows: p.dyRows[:k], ld: ld}
	gemm.PackA(&s.wA, false, cin, k, c.winoU[xi*cin*ld:(xi+1)*cin*ld], ld)
	gemm.SgemmPackedPanels(&s.wA, cp, 1, &s.wDY, c.winoBeta, c.winoV[xi*cin*cp:(xi+1)*cin*cp], cp)
	s.wDY = winoDYPanels{}
}

// winoFilterOut is dw's output channels [16b, 16b+16) from dVᵀ.
func (c *Conv2d) winoFilterOut(_, b int) {
	cp, co := c.wino.cp, 16*b
	winoDw(c.dw[co*c.Cin*9:], c.Cin*9, c.winoV[co:], c.Cin*cp, cp, c.Cin, min(16, c.Cout-co))
}

// winoDYPanels is a chunk's DY[ξ] as gemm.RunPanels: panel P (output
// channels NR·P …, NR = 16) holds row t (a tile) at (P·ld + t)·NR =
// rows[t] + Run(NR·P).
type winoDYPanels struct {
	src  []float32
	rows []int // t·NR
	ld   int
}

func (p *winoDYPanels) RunSource() ([]float32, []int) { return p.src, p.rows }
func (p *winoDYPanels) Run(j int) int                 { return j / gemm.NR * p.ld * gemm.NR }

func (p *winoDYPanels) PackB(dst []float32, pc, jc, kb, nb int) {
	for t := 0; t*gemm.NR < nb; t++ {
		at := ((jc/gemm.NR+t)*p.ld + pc) * gemm.NR
		copy(dst[t*gemm.NR*kb:(t+1)*gemm.NR*kb], p.src[at:at+kb*gemm.NR])
	}
}

// winoDy transforms dy's 2x2 tiles for cnt (<= 16) output channels, one a
// lane: the planes at src (plane floats apart, rows of w), tile t = s·n +
// u (strip s < rows, tile u < n) into dst[ξ·stride + NR·t + lane] = (A dy
// Aᵀ)[ξ/4][ξ%4], A = [1 0; 1 1; 1 −1; 0 −1]; lanes from cnt on 0.
func winoDy(dst []float32, stride int, src []float32, plane, w, n, rows, cnt int) {
	if n <= 0 || rows <= 0 {
		return
	}
	if len(dst) < 15*stride+gemm.NR*(rows*n-1)+16 || cnt > 0 && len(src) < (cnt-1)*plane+(2*rows-1)*w+2*n {
		panic(fmt.Sprintf("cpuops.winoDy: %d channels of %d strips of %d tiles, stride %d: dst %d, src %d floats", cnt, rows, n, stride, len(dst), len(src)))
	}
	if winoAsm {
		var s *float32
		if cnt > 0 {
			s = &src[0]
		}
		winoDyAVX512(&dst[0], stride, s, plane, w, n, rows, cnt, &winoLanes[0])
		return
	}
	winoDyGo(dst, stride, src, plane, w, n, rows, cnt)
}

// winoDyGo is winoDy in Go: the AVX-512 kernel's operations in its order.
func winoDyGo(dst []float32, stride int, src []float32, plane, w, n, rows, cnt int) {
	for s := 0; s < rows; s++ {
		for u := 0; u < n; u++ {
			t := s*n + u
			for l := 0; l < 16; l++ {
				var a, b, c, d float32
				if l < cnt {
					at := l*plane + 2*s*w + 2*u
					a, b, c, d = src[at], src[at+1], src[at+w], src[at+w+1]
				}
				r0 := [4]float32{a, a + b, a - b, -b}
				r1 := [4]float32{c, c + d, c - d, -d}
				for j := 0; j < 4; j++ {
					dst[j*stride+gemm.NR*t+l] = r0[j]
					dst[(4+j)*stride+gemm.NR*t+l] = r0[j] + r1[j]
					dst[(8+j)*stride+gemm.NR*t+l] = r0[j] - r1[j]
					dst[(12+j)*stride+gemm.NR*t+l] = -r1[j]
				}
			}
		}
	}
}

// winoDw is the inverse transform for cnt (<= 16) output channels, one
// a lane: for input channels c < n, with X[ξ] = src[ξ·stride + c·cstride
// + lane], the 3x3 Gᵀ X G into dw[lane·dwStride + 9c + 3k + l], Gᵀ = [1 ½
// ½ 0; 0 ½ −½ 0; 0 ½ ½ 1].
func winoDw(dw []float32, dwStride int, src []float32, stride, cstride, n, cnt int) {
	if n <= 0 || cnt <= 0 {
		return
	}
	if cnt > 16 || len(dw) < (cnt-1)*dwStride+9*n || len(src) < 15*stride+(n-1)*cstride+cnt {
		panic(fmt.Sprintf("cpuops.winoDw: %d by %d channels, strides %d, %d and %d: dw %d, src %d floats", cnt, n, dwStride, stride, cstride, len(dw), len(src)))
	}
	if winoAsm {
		winoDwAVX512(&dw[0], dwStride, &src[0], stride, cstride, n, cnt, &winoLanes[0])
		return
	}
	winoDwGo(dw, dwStride, src, stride, cstride, n, cnt)
}

// winoGT is Gᵀ times the column (x0, x1, x2, x3): h = ½(x1+x2), then
// x0+h, ½(x1−x2), h+x3.
func winoGT(x0, x1, x2, x3 float32) (float32, float32, float32) {
	h := 0.5 * (x1 + x2)
	return x0 + h, 0.5 * (x1 - x2), h + x3
}

// winoDwGo is winoDw in Go: the AVX-512 kernel's operations in its order.
func winoDwGo(dw []float32, dwStride int, src []float32, stride, cstride, n, cnt int) {
	for o := 0; o < cnt; o++ {
		for c := 0; c < n; c++ {
			x := src[c*cstride+o:]
			var r [3][4]float32 // Gᵀ X
			for j := 0; j < 4; j++ {
				r[0][j], r[1][j], r[2][j] = winoGT(x[j*stride], x[(4+j)*stride], x[(8+j)*stride], x[(12+j)*stride])
			}
			d := dw[o*dwStride+9*c : o*dwStride+9*c+9]
			for k := 0; k < 3; k++ {
				d[3*k], d[3*k+1], d[3*k+2] = winoGT(r[k][0], r[k][1], r[k][2], r[k][3])
			}
		}
	}
}
