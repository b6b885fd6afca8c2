//go:build stokecuda

package cudaops

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"stoke/augment"
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

// withEngine runs f with a fresh stream (of flags) and a GPU engine on it,
// d's context current on a locked thread, and frees both after; an error
// from f or from the set-up fails t.
func withEngine(t *testing.T, d *Device, flags cu.StreamFlags, f func(s cu.Stream, g *gpuEngine) error) {
	t.Helper()
	err := d.do(func() error {
		s, err := cu.MakeStream(flags)
		if err != nil {
			return err
		}
		defer s.Destroy()
		g, err := newGPUEngine(s)
		if err != nil {
			return err
		}
		defer g.free()
		return f(s, g)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// skipOnStandIn skips a test that measures the hardware itself (speed,
// overlap in time) when the driver is the CPU stand-in: its clocks are the
// host's, so such a figure would mean nothing.
// state reads a backend's (or a model's) parameters and optimizer state,
// failing t on error.
func state(t *testing.T, b stater) (params, optState []model.NamedTensor) {
	t.Helper()
	p, o, err := b.State()
	if err != nil {
		t.Fatal(err)
	}
	return p, o
}

func skipOnStandIn(t *testing.T, d *Device, what string) {
	t.Helper()
	if d.Simulated() {
		t.Skipf("measures %s of real hardware; under the CPU stand-in (%s) the figures would be the host's", what, d)
	}
}

// TestGPUKernelParity runs every kernel on the GPU and its mirror in ref_kernels_test.go
// on the same random inputs (forward and backward kernels alike).
func TestGPUKernelParity(t *testing.T) {
	withEngine(t, openOrSkip(t), cu.NonBlocking, func(_ cu.Stream, g *gpuEngine) error {
		c := cpuEngine{}
		rng := rand.New(rand.NewPCG(9, 9))
		type pair struct{ cpu, gpu buffer }
		must := func(what string, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		mk := func(n int) pair {
			v := randBatch(rng, n)
			gb, err := g.alloc(n)
			must("alloc", err)
			must("upload", g.upload(gb, v))
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
		B, H, W, Co := 4, 9, 7, 6
		for _, gm := range []struct {
			tA, tB   bool
			M, N, Kd int
		}{{false, false, 70, 130, 45}, {true, false, 33, 65, 17}, {false, true, 6, 45, 5000}, {true, true, 64, 64, 64}} {
			a, b, cc := mk(gm.M*gm.Kd), mk(gm.Kd*gm.N), mk(gm.M*gm.N)
			c.sgemm(gm.tA, gm.tB, gm.M, gm.N, gm.Kd, a.cpu, b.cpu, cc.cpu)
			must("sgemm", g.sgemm(gm.tA, gm.tB, gm.M, gm.N, gm.Kd, a.gpu, b.gpu, cc.gpu))
			check("sgemm", cc, 1e-4*math.Sqrt(float64(gm.Kd)))
		}
		HW := H * W
		z, bias, y := mk(Co*B*HW), mk(Co), mk(B*Co*HW)
		c.biasReLU(z.cpu, bias.cpu, y.cpu, B, Co, HW)
		must("biasReLU", g.biasReLU(z.gpu, bias.gpu, y.gpu, B, Co, HW))
		check("bias_relu", y, 1e-6)
		dz := mk(Co * B * HW)
		rs, cs := mk(Co), mk(B*HW)
		c.rowSums(dz.cpu, rs.cpu, Co, B*HW)
		must("rowSums", g.rowSums(dz.gpu, rs.gpu, Co, B*HW))
		check("row_sums", rs, 1e-4)
		c.colSums(dz.cpu, cs.cpu, Co, B*HW)
		must("colSums", g.colSums(dz.gpu, cs.gpu, Co, B*HW))
		check("col_sums", cs, 1e-5)
		ap, apd := mk(B*Co), mk(B*Co*HW)
		c.avgPool(y.cpu, ap.cpu, B*Co, HW)
		must("avgPool", g.avgPool(y.gpu, ap.gpu, B*Co, HW))
		check("avg_pool", ap, 1e-5)
		c.avgPoolBackward(ap.cpu, apd.cpu, B*Co, HW)
		must("avgPoolBackward", g.avgPoolBackward(ap.gpu, apd.gpu, B*Co, HW))
		check("avg_pool_backward", apd, 1e-6)
		lg, fb := mk(B*10), mk(10)
		c.addRows(lg.cpu, fb.cpu, B, 10)
		must("addRows", g.addRows(lg.gpu, fb.gpu, B, 10))
		check("add_rows", lg, 1e-6)
		labels := []int32{3, 0, 9, 5}
		gl, err := g.allocInt32(B)
		must("alloc", err)
		must("uploadInt32", g.uploadInt32(gl, labels))
		loss, dl := mk(B), mk(B*10)
		c.softmaxXent(lg.cpu, labels, loss.cpu, dl.cpu, B, 10, 3)
		must("softmaxXent", g.softmaxXent(lg.gpu, gl, loss.gpu, dl.gpu, B, 10, 3))
		check("softmax_xent loss", loss, 1e-5)
		check("softmax_xent grad", dl, 1e-5)
		for _, first := range []bool{true, false} {
			w, gr, v := mk(300), mk(300), mk(300)
			c.sgd(w.cpu, gr.cpu, v.cpu, 300, 0.1, 0.9, 1e-3, first)
			must("sgd", g.sgd(w.gpu, gr.gpu, v.gpu, 300, 0.1, 0.9, 1e-3, first))
			check("sgd w", w, 1e-6)
			check("sgd v", v, 1e-6)
		}
		u8 := make([]uint8, 2*3*HW)
		for i := range u8 {
			u8[i] = uint8(rng.IntN(256))
		}
		du8, err := g.allocU8(len(u8))
		must("alloc", err)
		must("uploadU8", g.uploadU8(du8, u8))
		nf := mk(len(u8))
		mean, std := [3]float32{0.485, 0.456, 0.406}, [3]float32{0.229, 0.224, 0.225}
		refNormalizeU8(u8, nf.cpu.([]float32), 2, HW, mean, std)
		must("normalizeU8", g.normalizeU8(du8, nf.gpu, 2, HW, mean, std))
		check("normalize_u8", nf, 1e-6)
		nf2 := mk(len(u8)) // the first row only: the second keeps its values
		refNormalizeU8(u8, nf2.cpu.([]float32), 1, HW, mean, std)
		must("normalizeU8", g.normalizeU8(du8, nf2.gpu, 1, HW, mean, std))
		check("normalize_u8 B=1", nf2, 1e-6)
		return nil
	})
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
		b, err := NewBackend(d, gpuSpec, opt, nonBlocking, imageNet)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Load(state(t, m)); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(11, uint64(len(t.Name()))))
		S := gpuSpec.InputSize
		ref, _ := model.New(gpuSpec, opt)
		ref.Load(state(t, m))
		for step, n := range []int{16, 11, 16} {
			x := randBatch(rng, opt.Batch*3*S*S)
			labels := make([]int32, opt.Batch)
			for i := range labels {
				labels[i] = int32(rng.IntN(gpuSpec.Classes))
			}
			want, _ := logits(ref, x, n)
			got, err := b.Logits(x, n)
			if err != nil {
				t.Fatal(err)
			}
			close32(t, "logits", got, want, 1e-4)
			wr, err1 := trainStep(ref, x, labels, n, 0.05)
			gr, times, err2 := runStep(b, model.Input{X: x, Labels: labels, N: n}, 0.05)
			if err := first(err1, err2); err != nil {
				t.Fatal(err)
			}
			if math.Abs(gr.Loss-wr.Loss) > 1e-4 || gr.Correct != wr.Correct {
				t.Fatalf("non_blocking=%v step %d: GPU %+v, CPU model %+v", nonBlocking, step, gr, wr)
			}
			wp, wv := state(t, ref)
			gp, gv := state(t, b)
			for i := range wp {
				close32(t, wp[i].Name, gp[i].Data, wp[i].Data, 1e-4)
			}
			for i := range wv {
				close32(t, wv[i].Name, gv[i].Data, wv[i].Data, 1e-3)
			}
			t.Logf("non_blocking=%v step %d: loss GPU %.6f CPU %.6f; copy %v compute %v", nonBlocking, step, gr.Loss, wr.Loss, times.Copy, times.Compute)
		}
		ref.Close()
		b.Close()
	}
}

// TestGPUBandwidth measures host-to-device copies from pinned and from
// pageable memory (64 MiB, 10 times each, timed with events).
func TestGPUBandwidth(t *testing.T) {
	d := openOrSkip(t)
	skipOnStandIn(t, d, "the bandwidth")
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
		defer cu.DestroyEvent(&start)
		defer cu.DestroyEvent(&end)
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
// while batch N computes: by the events, copy N+1 ends before compute N ends
// (a copy's start event alone proves nothing: on an idle stream it is
// recorded as soon as it is queued).
func TestGPUOverlap(t *testing.T) {
	d := openOrSkip(t)
	skipOnStandIn(t, d, "the overlap in time")
	spec := model.Spec{InputSize: 128, Classes: 10, Conv: []model.ConvSpec{{Channels: 32, Kernel: 3, Pool: true}, {Channels: 64, Kernel: 3, Pool: true}, {Channels: 128, Kernel: 3}}}
	opt := model.Options{Batch: 128, Seed: 1, Momentum: 0.9}
	b, err := NewBackend(d, spec, opt, true, imageNet)
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
	copy(x, randBatch(rand.New(rand.NewPCG(1, 2)), len(x))) // cuMemHostAlloc does not clear
	labels := make([]int32, opt.Batch)
	for i := range labels {
		labels[i] = int32(i % spec.Classes)
	}
	var overlapped int
	for trial := range 5 {
		in := model.Input{X: x, Labels: labels, N: opt.Batch}
		p1, err := startStep(b, in, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := startStep(b, in, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		r1, _, err1 := p1.Wait()
		r2, _, err2 := p2.Wait()
		out, err3 := b.Results() // the events are complete once the ring is read
		if err := first(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		if len(out) == 2 {
			r1, r2 = out[0].Result, out[1].Result
		}
		if math.IsNaN(r1.Loss) || math.IsNaN(r2.Loss) {
			t.Fatalf("trial %d: loss %v, %v", trial, r1.Loss, r2.Loss)
		}
		var before, c1, c2 float64
		err = d.do(func() error {
			var e1, e2, e3 error
			before, e1 = p2.ev().copyEnd.Elapsed(p1.ev().computeEnd) // > 0: copy N+1 ended before compute N ended
			c1, e2 = p1.ev().computeStart.Elapsed(p1.ev().computeEnd)
			c2, e3 = p2.ev().copyStart.Elapsed(p2.ev().copyEnd)
			return first(e1, e2, e3)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("trial %d: compute N %.3f ms, copy N+1 %.3f ms, which ended %.3f ms before compute N ended", trial, c1, c2, before)
		if before > 0 {
			overlapped++
		}
	}
	if overlapped == 0 {
		t.Fatal("the copy of batch N+1 never ended before the compute of batch N did: no overlap")
	}
}

// TestGPUCopyOrder shows what non_blocking changes, by the order of events
// (under the stand-in too: no timing, only order). Blocking, as PyTorch's
// .to(device): the copy of batch N+1 starts after the compute of batch N
// ended. non_blocking: it runs during that compute and ends before it.
func TestGPUCopyOrder(t *testing.T) {
	d := openOrSkip(t)
	opt := model.Options{Batch: 16, Seed: 3, Momentum: 0.9}
	S := gpuSpec.InputSize
	x := randBatch(rand.New(rand.NewPCG(7, 7)), opt.Batch*3*S*S)
	labels := make([]int32, opt.Batch)
	for _, nonBlocking := range []bool{false, true} {
		b, err := NewBackend(d, gpuSpec, opt, nonBlocking, imageNet)
		if err != nil {
			t.Fatal(err)
		}
		ok := 0
		for trial := range 3 {
			in := model.Input{X: x, Labels: labels, N: opt.Batch}
			p1, err1 := startStep(b, in, 0.01)
			p2, err2 := startStep(b, in, 0.01)
			if err := first(err1, err2); err != nil {
				t.Fatal(err)
			}
			_, _, err1 = p1.Wait()
			_, _, err2 = p2.Wait()
			_, err3 := b.Results() // the events are complete once the ring is read
			if err := first(err1, err2, err3); err != nil {
				t.Fatal(err)
			}
			var after, before float64
			err = d.do(func() error {
				var e1, e2 error
				after, e1 = p1.ev().computeEnd.Elapsed(p2.ev().copyStart) // >= 0: copy N+1 began after compute N ended
				before, e2 = p2.ev().copyEnd.Elapsed(p1.ev().computeEnd)  // > 0: copy N+1 ended before compute N ended
				return first(e1, e2)
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("non_blocking=%v trial %d: copy N+1 starts %.3f ms after compute N ends, ends %.3f ms before it", nonBlocking, trial, after, before)
			if nonBlocking && before > 0 || !nonBlocking && after >= 0 {
				ok++
			}
		}
		b.Close()
		switch {
		case !nonBlocking && ok != 3:
			t.Errorf("blocking: the copy of batch N+1 started before the compute of batch N ended (%d of 3 trials in order)", ok)
		case nonBlocking && ok == 0:
			t.Errorf("non_blocking: the copy of batch N+1 never ran during the compute of batch N")
		}
	}
}

// TestGPUTrainingLossFalls trains on a learnable toy task (the class is the
// brightest of four image quadrants) and expects the loss to fall.
func TestGPUTrainingLossFalls(t *testing.T) {
	d := openOrSkip(t)
	spec := model.Spec{InputSize: 16, Classes: 4, Conv: []model.ConvSpec{{Channels: 8, Kernel: 3, Pool: true}, {Channels: 16, Kernel: 3}}}
	opt := model.Options{Batch: 32, Seed: 2, Momentum: 0.9}
	b, err := NewBackend(d, spec, opt, true, imageNet)
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

// u8Batch is a random uint8 batch (rows from n on zero, as the loader pads,
// or garbage when garbage is set), its float32 form by augment.NormalizeU8
// (the trainer's host path) and random labels.
func u8Batch(rng *rand.Rand, spec model.Spec, B, n int, garbage bool) ([]uint8, []float32, []int32) {
	S := spec.InputSize
	u8 := make([]uint8, B*3*S*S)
	for i := range u8 {
		u8[i] = uint8(rng.IntN(256))
	}
	if !garbage {
		clear(u8[n*3*S*S:])
	}
	x := make([]float32, len(u8))
	augment.NormalizeU8(x, u8, S, imageNet.Mean, imageNet.Std)
	labels := make([]int32, B)
	for i := range labels {
		labels[i] = int32(rng.IntN(spec.Classes))
	}
	return u8, x, labels
}

// TestGPUU8MatchesFloat: uint8 batches normalized on the device (copy of
// the bytes, normalize_u8, the step) against float32 batches normalized on
// the host by augment.NormalizeU8, on two backends with the same weights,
// blocking and non_blocking: logits, loss, hits, every weight and momentum
// buffer after each of three steps (one padded with zeros, one padded with
// garbage), and eval.
func TestGPUU8MatchesFloat(t *testing.T) {
	d := openOrSkip(t)
	opt := model.Options{Batch: 16, Seed: 5, Momentum: 0.9, WeightDecay: 5e-4}
	m, err := model.New(gpuSpec, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, nonBlocking := range []bool{false, true} {
		b32, err1 := NewBackend(d, gpuSpec, opt, nonBlocking, imageNet)
		b8, err2 := NewBackend(d, gpuSpec, opt, nonBlocking, imageNet)
		if err := first(err1, err2); err != nil {
			t.Fatal(err)
		}
		for _, b := range []*Backend{b32, b8} {
			if err := b.Load(state(t, m)); err != nil {
				t.Fatal(err)
			}
		}
		rng := rand.New(rand.NewPCG(13, 1))
		for step, n := range []int{16, 11, 7} {
			u8, x, labels := u8Batch(rng, gpuSpec, opt.Batch, n, step == 2)
			want, err1 := b32.Logits(x, n)
			got, err2 := b8.LogitsU8(u8, n)
			if err := first(err1, err2); err != nil {
				t.Fatal(err)
			}
			close32(t, "logits", got, want, 1e-4)
			wr, t32, err1 := runStep(b32, model.Input{X: x, Labels: labels, N: n}, 0.05)
			gr, t8, err2 := runStep(b8, model.Input{U8: u8, Labels: labels, N: n}, 0.05)
			if err := first(err1, err2); err != nil {
				t.Fatal(err)
			}
			if math.Abs(gr.Loss-wr.Loss) > 1e-4 || gr.Correct != wr.Correct {
				t.Fatalf("non_blocking=%v step %d: uint8 %+v, float32 %+v", nonBlocking, step, gr, wr)
			}
			wp, wv := state(t, b32)
			gp, gv := state(t, b8)
			for i := range wp {
				close32(t, wp[i].Name, gp[i].Data, wp[i].Data, 1e-4)
			}
			for i := range wv {
				close32(t, wv[i].Name, gv[i].Data, wv[i].Data, 1e-3)
			}
			t.Logf("non_blocking=%v step %d n=%d: loss uint8 %.6f float32 %.6f; copy %v vs %v, compute %v vs %v",
				nonBlocking, step, n, gr.Loss, wr.Loss, t8.Copy, t32.Copy, t8.Compute, t32.Compute)
		}
		u8, x, labels := u8Batch(rng, gpuSpec, opt.Batch, 9, false)
		we, err1 := b32.Eval(model.Input{X: x, Labels: labels, N: 9})
		ge, err2 := b8.Eval(model.Input{U8: u8, Labels: labels, N: 9})
		if err := first(err1, err2); err != nil {
			t.Fatal(err)
		}
		if math.Abs(ge.LossSum-we.LossSum) > 1e-3 || ge.Top1 != we.Top1 || ge.Top5 != we.Top5 {
			t.Fatalf("non_blocking=%v eval: uint8 %+v, float32 %+v", nonBlocking, ge, we)
		}
		if _, _, err := runStep(b8, model.Input{U8: u8[1:], Labels: labels, N: 9}, 0.05); err == nil {
			t.Fatal("Start accepted a short uint8 batch")
		}
		if _, _, err := runStep(b8, model.Input{X: x, U8: u8, Labels: labels, N: 9}, 0.05); err == nil {
			t.Fatal("Start accepted an input holding both a float32 and a uint8 batch")
		}
		b32.Close()
		b8.Close()
	}
}

// TestGPUU8AsyncCopy: Start on a uint8 batch returns only once the batch's bytes have
// left the host buffer. The loop reuses one host buffer (pinned, then
// pageable) as the trainer does: it starts step N, overwrites the buffer and
// the labels with the next batch at once, then waits for step N-1. The
// results must be those of synchronous float32 steps on the same batches.
func TestGPUU8AsyncCopy(t *testing.T) {
	d := openOrSkip(t)
	spec := model.Spec{InputSize: 64, Classes: 10, Conv: []model.ConvSpec{{Channels: 16, Kernel: 3, Pool: true}, {Channels: 32, Kernel: 3}}}
	opt := model.Options{Batch: 64, Seed: 6, Momentum: 0.9}
	if d.Simulated() { // the same loop on a sixteenth of the arithmetic
		spec.InputSize, opt.Batch = 32, 16
	}
	S, B := spec.InputSize, opt.Batch
	for _, kind := range []string{"pinned", "pageable"} {
		b8, err1 := NewBackend(d, spec, opt, true, imageNet)
		b32, err2 := NewBackend(d, spec, opt, false, imageNet)
		if err := first(err1, err2); err != nil {
			t.Fatal(err)
		}
		var host []uint8
		if kind == "pinned" {
			mem, err := d.Pinned().Alloc(opt.Batch * 3 * S * S)
			if err != nil {
				t.Fatal(err)
			}
			host = mem
		} else {
			host = make([]uint8, opt.Batch*3*S*S)
		}
		hostLabels := make([]int32, opt.Batch)
		rng := rand.New(rand.NewPCG(21, 2))
		const steps = 6
		ns := []int{B, B, B * 40 / 64, B, B * 13 / 64, B}
		batches := make([][]uint8, steps)
		labels := make([][]int32, steps)
		want := make([]model.StepResult, steps)
		for k := range steps {
			var x []float32
			batches[k], x, labels[k] = u8Batch(rng, spec, opt.Batch, ns[k], false)
			r, err := b32.TrainStep(x, labels[k], ns[k], 0.02)
			if err != nil {
				t.Fatal(err)
			}
			want[k] = r
		}
		copy(host, batches[0])
		copy(hostLabels, labels[0])
		var prev model.Pending
		var times model.StepTimes
		got := make([]model.StepResult, 0, steps)
		for k := range steps {
			pd, err := b8.Start(model.Input{U8: host, Labels: hostLabels, N: ns[k]}, 0.02)
			if err != nil {
				t.Fatal(err)
			}
			if k+1 < steps { // the buffer is free: load the next batch into it
				copy(host, batches[k+1])
				copy(hostLabels, labels[k+1])
			} else {
				for i := range host {
					host[i] = 0xff
				}
			}
			if prev != nil {
				r, _, err := prev.Wait()
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, r)
			}
			prev = pd
		}
		r, times, err := prev.Wait()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
		if got[0].Deferred { // the figures stayed on the device: read them now
			out, err := b8.Results()
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != steps {
				t.Fatalf("%s: %d outcomes for %d deferred steps", kind, len(out), steps)
			}
			for k, o := range out {
				if o.Err != nil {
					t.Fatal(o.Err)
				}
				got[k], times = o.Result, o.Times
			}
		}
		for k := range steps {
			if math.Abs(got[k].Loss-want[k].Loss) > 1e-4 || got[k].Correct != want[k].Correct {
				t.Fatalf("%s step %d: async uint8 %+v, float32 %+v", kind, k, got[k], want[k])
			}
		}
		wp, _ := state(t, b32)
		gp, _ := state(t, b8)
		for i := range wp {
			close32(t, kind+" "+wp[i].Name, gp[i].Data, wp[i].Data, 1e-4)
		}
		t.Logf("%s: %d async uint8 steps match; last copy %v (%d bytes), compute %v", kind, steps, times.Copy, len(host), times.Compute)
		b8.Close()
		b32.Close()
		if kind == "pinned" {
			if err := d.Pinned().Free(host); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestStandInCatchesMissingCopyWait shows that the stand-in catches what it
// exists for: with the compute stream's wait for the copy's event left out
// (testSkipCopyWait) and random delays in the stream workers (chaos mode),
// steps read batches that are not there yet and their losses differ from
// the CPU model's; with the wait, under the same chaos, they all match.
func TestStandInCatchesMissingCopyWait(t *testing.T) {
	d := openOrSkip(t)
	if !d.Simulated() {
		t.Skip("chaos mode is the CPU stand-in's (scripts/gpu-sim.sh); on a GPU the missing wait would only sometimes show")
	}
	opt := model.Options{Batch: 8, Seed: 3, Momentum: 0.9}
	S := gpuSpec.InputSize
	mismatches := func(skipWait bool) int {
		t.Setenv("STOKE_CUDASIM_CHAOS", "17") // read by the stand-in when a stream is created
		t.Setenv("STOKE_CUDASIM_CHAOS_US", "3000")
		b, err := NewBackend(d, gpuSpec, opt, true, imageNet)
		os.Unsetenv("STOKE_CUDASIM_CHAOS")
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		ref, err := model.New(gpuSpec, opt)
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Close()
		if err := b.Load(state(t, ref)); err != nil {
			t.Fatal(err)
		}
		testSkipCopyWait = skipWait
		defer func() { testSkipCopyWait = false }()
		rng := rand.New(rand.NewPCG(5, 5))
		bad := 0
		for step := range 24 { // about 1 step in 3 was caught when measured: all 24 miss ~2e-4 of the time
			x := randBatch(rng, opt.Batch*3*S*S)
			labels := make([]int32, opt.Batch)
			for i := range labels {
				labels[i] = int32(rng.IntN(gpuSpec.Classes))
			}
			// One step at a time: the compute stream is idle when the copy is
			// queued, so only the event orders the step after its batch.
			want, err1 := trainStep(ref, x, labels, opt.Batch, 0.05)
			got, err2 := b.TrainStep(x, labels, opt.Batch, 0.05)
			if err := first(err1, err2); err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.Loss-want.Loss) > 1e-4 || got.Correct != want.Correct {
				bad++
				t.Logf("skip wait=%v step %d: loss %.6f, CPU model %.6f", skipWait, step, got.Loss, want.Loss)
				if skipWait {
					break // caught; the weights differ from here on anyway
				}
			}
		}
		return bad
	}
	if n := mismatches(false); n != 0 {
		t.Fatalf("with the copy-event wait, %d steps under chaos mode differ from the CPU model", n)
	}
	if n := mismatches(true); n == 0 {
		t.Fatal("without the copy-event wait, every step under chaos mode matched the CPU model: the stand-in did not catch it")
	}
	t.Log("without the copy-event wait the stand-in's chaos mode gives wrong losses; with it, all match")
}

// TestGPUStateError: reading the state of a closed backend is an error, not
// a panic (a checkpoint then fails cleanly), and an open one reads the
// model's layout.
func TestGPUStateError(t *testing.T) {
	d := openOrSkip(t)
	spec := model.Spec{InputSize: 8, Classes: 3, Conv: []model.ConvSpec{{Channels: 4, Kernel: 3}}}
	opt := model.Options{Batch: 2, Seed: 1, Momentum: 0.9}
	b, err := NewBackend(d, spec, opt, false, imageNet)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(spec, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	params, optState := state(t, b)
	mp, mo := state(t, m)
	if len(params) != len(mp) || len(optState) != len(mo) {
		t.Fatalf("state: %d params, %d optimizer tensors; the model has %d, %d", len(params), len(optState), len(mp), len(mo))
	}
	b.Close()
	p, o, err := b.State()
	if err == nil || p != nil || o != nil {
		t.Fatalf("State after Close: %d params, %d tensors, err %v; want an error and nothing", len(p), len(o), err)
	}
}
