//go:build stokecuda

package cudaops

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"stoke/model"
)

// The GPU tests: scripts/gpu-check.sh builds them into one binary for a
// machine with only the driver. Each skips when there is no usable GPU.

func openOrSkip(t *testing.T) *Device {
	t.Helper()
	d, err := Open(0)
	var ue *UnavailableError
	if errors.As(err, &ue) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	t.Logf("device: %s", d)
	return d
}

// TestGPUKernelParity runs every kernel on the GPU and its mirror in ref.go
// on the same random inputs (forward and backward kernels alike).
func TestGPUKernelParity(t *testing.T) {
	d := openOrSkip(t)
	err := d.do(func() error {
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return err
		}
		defer s.Destroy()
		g, err := newGPUEngine(s)
		if err != nil {
			return err
		}
		defer g.free()
		c := cpuEngine{}
		rng := rand.New(rand.NewPCG(9, 9))
		type pair struct{ cpu, gpu buffer }
		mk := func(n int) pair {
			v := randBatch(rng, n)
			gb, _ := g.alloc(n)
			g.upload(gb, v)
			return pair{append([]float32(nil), v...), gb}
		}
		check := func(name string, p pair, tol float64) {
			t.Helper()
			want := p.cpu.([]float32)
			got := make([]float32, len(want))
			if err := g.download(got, p.gpu); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			close32(t, name, got, want, tol)
			t.Logf("%-18s ok (%d values)", name, len(want))
		}
		B, C, H, W, K, Co := 4, 5, 9, 7, 3, 6
		x, col := mk(B*C*H*W), mk(C*K*K*B*H*W)
		c.im2col(x.cpu, col.cpu, B, C, H, W, K, 1)
		g.im2col(x.gpu, col.gpu, B, C, H, W, K, 1)
		check("im2col", col, 0)
		dx := mk(B * C * H * W)
		c.col2im(col.cpu, dx.cpu, B, C, H, W, K, 1)
		g.col2im(col.gpu, dx.gpu, B, C, H, W, K, 1)
		check("col2im", dx, 1e-5)
		for _, gm := range []struct {
			tA, tB   bool
			M, N, Kd int
		}{{false, false, 70, 130, 45}, {true, false, 33, 65, 17}, {false, true, 6, 45, 5000}, {true, true, 64, 64, 64}} {
			a, b, cc := mk(gm.M*gm.Kd), mk(gm.Kd*gm.N), mk(gm.M*gm.N)
			c.sgemm(gm.tA, gm.tB, gm.M, gm.N, gm.Kd, a.cpu, b.cpu, cc.cpu)
			g.sgemm(gm.tA, gm.tB, gm.M, gm.N, gm.Kd, a.gpu, b.gpu, cc.gpu)
			check("sgemm", cc, 1e-4*math.Sqrt(float64(gm.Kd)))
		}
		HW := H * W
		z, bias, y := mk(Co*B*HW), mk(Co), mk(B*Co*HW)
		c.biasReLU(z.cpu, bias.cpu, y.cpu, B, Co, HW)
		g.biasReLU(z.gpu, bias.gpu, y.gpu, B, Co, HW)
		check("bias_relu", y, 1e-6)
		dy, dz := mk(B*Co*HW), mk(Co*B*HW)
		c.reluBackward(dy.cpu, y.cpu, dz.cpu, B, Co, HW)
		g.reluBackward(dy.gpu, y.gpu, dz.gpu, B, Co, HW)
		check("relu_backward", dz, 0)
		rs, cs := mk(Co), mk(B*HW)
		c.rowSums(dz.cpu, rs.cpu, Co, B*HW)
		g.rowSums(dz.gpu, rs.gpu, Co, B*HW)
		check("row_sums", rs, 1e-4)
		c.colSums(dz.cpu, cs.cpu, Co, B*HW)
		g.colSums(dz.gpu, cs.gpu, Co, B*HW)
		check("col_sums", cs, 1e-5)
		OH, OW := H/2, W/2
		py := mk(B * Co * OH * OW)
		pa := make([]int32, B*Co*OH*OW)
		ga, _ := g.allocInt32(len(pa))
		c.maxPool(y.cpu, py.cpu, pa, B*Co, H, W)
		g.maxPool(y.gpu, py.gpu, ga, B*Co, H, W)
		check("max_pool", py, 0)
		pdx := mk(B * Co * HW)
		clear(pdx.cpu.([]float32))
		g.zero(pdx.gpu, 0, B*Co*HW)
		dpy := mk(B * Co * OH * OW)
		c.maxPoolBackward(dpy.cpu, pa, pdx.cpu, B*Co, H, W)
		g.maxPoolBackward(dpy.gpu, ga, pdx.gpu, B*Co, H, W)
		check("max_pool_backward", pdx, 0)
		ap, apd := mk(B*Co), mk(B*Co*HW)
		c.avgPool(y.cpu, ap.cpu, B*Co, HW)
		g.avgPool(y.gpu, ap.gpu, B*Co, HW)
		check("avg_pool", ap, 1e-5)
		c.avgPoolBackward(ap.cpu, apd.cpu, B*Co, HW)
		g.avgPoolBackward(ap.gpu, apd.gpu, B*Co, HW)
		check("avg_pool_backward", apd, 1e-6)
		lg, fb := mk(B*10), mk(10)
		c.addRows(lg.cpu, fb.cpu, B, 10)
		g.addRows(lg.gpu, fb.gpu, B, 10)
		check("add_rows", lg, 1e-6)
		labels := []int32{3, 0, 9, 5}
		gl, _ := g.allocInt32(B)
		g.uploadInt32(gl, labels)
		loss, dl := mk(B), mk(B*10)
		c.softmaxXent(lg.cpu, labels, loss.cpu, dl.cpu, B, 10, 3)
		g.softmaxXent(lg.gpu, gl, loss.gpu, dl.gpu, B, 10, 3)
		check("softmax_xent loss", loss, 1e-5)
		check("softmax_xent grad", dl, 1e-5)
		for _, first := range []bool{true, false} {
			w, gr, v := mk(300), mk(300), mk(300)
			c.sgd(w.cpu, gr.cpu, v.cpu, 300, 0.1, 0.9, 1e-3, first)
			g.sgd(w.gpu, gr.gpu, v.gpu, 300, 0.1, 0.9, 1e-3, first)
			check("sgd w", w, 1e-6)
			check("sgd v", v, 1e-6)
		}
		u8 := make([]uint8, 2*3*HW)
		for i := range u8 {
			u8[i] = uint8(rng.IntN(256))
		}
		du8, _ := g.alloc((len(u8) + 3) / 4)
		if err := cu.MemcpyHtoD(du8.(devBuf).p, unsafe.Pointer(&u8[0]), int64(len(u8))); err != nil {
			return err
		}
		nf := mk(len(u8))
		mean, std := [3]float32{0.485, 0.456, 0.406}, [3]float32{0.229, 0.224, 0.225}
		refNormalizeU8(u8, nf.cpu.([]float32), 2, HW, mean, std)
		g.normalizeU8(du8.(devBuf).p, nf.gpu.(devBuf).p, 2, HW, mean, std)
		check("normalize_u8", nf, 1e-6)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var gpuSpec = model.Spec{InputSize: 32, Classes: 10, Conv: []model.ConvSpec{
	{Channels: 16, Kernel: 3, Pool: true}, {Channels: 32, Kernel: 3, Pool: true}, {Channels: 64, Kernel: 3}}}

// TestGPUNetMatchesModel: the whole step on the GPU against the gorgonia
// model on the same weights and batches: logits, loss, hits, and every
// weight and momentum buffer after three SGD steps (so every gradient).
func TestGPUNetMatchesModel(t *testing.T) {
	d := openOrSkip(t)
	opt := model.Options{Batch: 16, Seed: 3, Momentum: 0.9, WeightDecay: 5e-4}
	m, err := model.New(gpuSpec, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, nonBlocking := range []bool{false, true} {
		b, err := NewBackend(d, gpuSpec, opt, nonBlocking)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Load(m.Params(), m.OptimizerState()); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(11, uint64(len(t.Name()))))
		S := gpuSpec.InputSize
		ref, _ := model.New(gpuSpec, opt)
		ref.Load(m.Params(), m.OptimizerState())
		for step, n := range []int{16, 11, 16} {
			x := randBatch(rng, opt.Batch*3*S*S)
			labels := make([]int32, opt.Batch)
			for i := range labels {
				labels[i] = int32(rng.IntN(gpuSpec.Classes))
			}
			want, _ := ref.Logits(x, n)
			got, err := b.Logits(x, n)
			if err != nil {
				t.Fatal(err)
			}
			close32(t, "logits", got, want, 1e-4)
			wr, err1 := ref.TrainStep(x, labels, n, 0.05)
			gr, err2 := b.TrainStep(x, labels, n, 0.05)
			if err := first(err1, err2); err != nil {
				t.Fatal(err)
			}
			if math.Abs(gr.Loss-wr.Loss) > 1e-4 || gr.Correct != wr.Correct {
				t.Fatalf("non_blocking=%v step %d: GPU %+v, CPU model %+v", nonBlocking, step, gr, wr)
			}
			wp, gp := ref.Params(), b.Params()
			for i := range wp {
				close32(t, wp[i].Name, gp[i].Data, wp[i].Data, 1e-4)
			}
			wv, gv := ref.OptimizerState(), b.OptimizerState()
			for i := range wv {
				close32(t, wv[i].Name, gv[i].Data, wv[i].Data, 1e-3)
			}
			c, k := b.LastStepTimes()
			t.Logf("non_blocking=%v step %d: loss GPU %.6f CPU %.6f; copy %v compute %v", nonBlocking, step, gr.Loss, wr.Loss, c, k)
		}
		ref.Close()
		b.Close()
	}
}

// TestGPUBandwidth measures host-to-device copies from pinned and from
// pageable memory (64 MiB, 10 times each, timed with events).
func TestGPUBandwidth(t *testing.T) {
	d := openOrSkip(t)
	const size = 64 << 20
	pinned, err := d.Pinned().Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Pinned().Free(pinned)
	pageable := make([]byte, size)
	for i := range pageable {
		pageable[i], pinned[i] = byte(i), byte(i)
	}
	rate := map[string]float64{}
	err = d.do(func() error {
		dst, err := cu.MemAlloc(size)
		if err != nil {
			return err
		}
		defer cu.MemFree(dst)
		s, _ := cu.MakeStream(cu.NonBlocking)
		defer s.Destroy()
		start, _ := cu.MakeEvent(cu.DefaultEvent)
		end, _ := cu.MakeEvent(cu.DefaultEvent)
		for _, kind := range []string{"pinned", "pageable", "pinned"} {
			src := pinned
			if kind == "pageable" {
				src = pageable
			}
			start.Record(s)
			for range 10 {
				if err := cu.MemcpyHtoDAsync(dst, unsafe.Pointer(&src[0]), size, s); err != nil {
					return err
				}
			}
			end.Record(s)
			if err := end.Synchronize(); err != nil {
				return err
			}
			msec, err := start.Elapsed(end)
			if err != nil {
				return err
			}
			rate[kind] = 10 * size / (msec / 1000) / 1e9
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("host->device: pinned %.1f GB/s, pageable %.1f GB/s (%.1fx)", rate["pinned"], rate["pageable"], rate["pinned"]/rate["pageable"])
	if rate["pinned"] < rate["pageable"] {
		t.Errorf("pinned copies (%.1f GB/s) slower than pageable (%.1f GB/s)", rate["pinned"], rate["pageable"])
	}
}

// TestGPUOverlap proves that with non_blocking the copy of batch N+1 runs
// while batch N computes: by the events, copy N+1 starts before compute N
// ends and ends after compute N starts.
func TestGPUOverlap(t *testing.T) {
	d := openOrSkip(t)
	spec := model.Spec{InputSize: 128, Classes: 10, Conv: []model.ConvSpec{{Channels: 32, Kernel: 3, Pool: true}, {Channels: 64, Kernel: 3, Pool: true}, {Channels: 128, Kernel: 3}}}
	opt := model.Options{Batch: 128, Seed: 1, Momentum: 0.9}
	b, err := NewBackend(d, spec, opt, true)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	xbuf, err := d.Pinned().Alloc(4 * opt.Batch * 3 * 128 * 128)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Pinned().Free(xbuf)
	x := unsafe.Slice((*float32)(unsafe.Pointer(&xbuf[0])), len(xbuf)/4)
	labels := make([]int32, opt.Batch)
	var overlapped int
	for trial := range 5 {
		p1, err := b.StartStep(x, labels, opt.Batch, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := b.StartStep(x, labels, opt.Batch, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p1.Wait(); err != nil {
			t.Fatal(err)
		}
		if _, err := p2.Wait(); err != nil {
			t.Fatal(err)
		}
		var a, z, c1, c2 float64
		d.do(func() error {
			a, _ = p2.s.copyStart.Elapsed(p1.s.computeEnd) // > 0: copy N+1 began before compute N ended
			z, _ = p1.s.computeStart.Elapsed(p2.s.copyEnd) // > 0: copy N+1 ended after compute N began
			c1, _ = p1.s.computeStart.Elapsed(p1.s.computeEnd)
			c2, _ = p2.s.copyStart.Elapsed(p2.s.copyEnd)
			return nil
		})
		ov := math.Min(a, c2) // ms of copy N+1 inside compute N, roughly
		t.Logf("trial %d: compute N %.3f ms, copy N+1 %.3f ms; copy N+1 starts %.3f ms before compute N ends, ends %.3f ms after it starts", trial, c1, c2, a, z)
		if a > 0 && z > 0 && ov > 0 {
			overlapped++
		}
	}
	if overlapped == 0 {
		t.Fatal("the copy of batch N+1 never overlapped the compute of batch N")
	}
}

// TestGPUTrainingLossFalls trains on a learnable toy task (the class is the
// brightest of four image quadrants) and expects the loss to fall.
func TestGPUTrainingLossFalls(t *testing.T) {
	d := openOrSkip(t)
	spec := model.Spec{InputSize: 16, Classes: 4, Conv: []model.ConvSpec{{Channels: 8, Kernel: 3, Pool: true}, {Channels: 16, Kernel: 3}}}
	opt := model.Options{Batch: 32, Seed: 2, Momentum: 0.9}
	b, err := NewBackend(d, spec, opt, true)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rng := rand.New(rand.NewPCG(4, 4))
	batch := func() ([]float32, []int32) {
		x := randBatch(rng, opt.Batch*3*16*16)
		labels := make([]int32, opt.Batch)
		for i := range labels {
			q := rng.IntN(4)
			labels[i] = int32(q)
			for c := range 3 {
				for h := range 8 {
					for w := range 8 {
						x[((i*3+c)*16+h+8*(q/2))*16+w+8*(q%2)] += 2
					}
				}
			}
		}
		return x, labels
	}
	start := time.Now()
	var firstLoss, lastLoss float64
	for step := range 200 {
		x, labels := batch()
		r, err := b.TrainStep(x, labels, opt.Batch, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		if step < 10 {
			firstLoss += r.Loss / 10
		}
		if step >= 190 {
			lastLoss += r.Loss / 10
		}
	}
	t.Logf("loss %.4f (first 10 steps) -> %.4f (last 10), 200 steps in %v", firstLoss, lastLoss, time.Since(start))
	if !(lastLoss < 0.5*firstLoss) {
		t.Fatalf("loss did not fall: %.4f -> %.4f", firstLoss, lastLoss)
	}
}
