//go:build stokecuda

package trainer

import (
	"bytes"
	"context"
	"math"
	"testing"

	"stoke/cudaops"
	"stoke/model"
)

// TestGPUCountersAgreeWithDriver: the per-step counts in each metrics.jsonl
// record are what cudaops.ReadDriverCounters says around the same steps
// (read before the epoch's first step starts and after its last one is
// waited for), divided by the steps between. Blocking copies from pageable
// batches, and non_blocking copies from pinned ones (the loader's pinned
// buffers are allocated before the first step). graph is what the backend
// did: false with cuda.graphs off; with auto, true from the first epoch on
// (its first step launches kernel by kernel, later ones are captured and
// replayed). Under the stand-in (scripts/gpu-sim.sh) as on a GPU.
func TestGPUCountersAgreeWithDriver(t *testing.T) {
	if !cudaUsable() {
		t.Skip("no usable CUDA device (a CPU build, or no GPU; scripts/gpu-sim.sh runs this under the stand-in)")
	}
	for _, tc := range []struct {
		name        string
		pinned, nbl bool
		graphs      string
	}{{"pageable blocking, graphs off", false, false, cudaops.GraphsOff}, {"pinned non_blocking, graphs auto", true, true, cudaops.GraphsAuto}} {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyConfig(t)
			c.Train.Device = "cuda"
			c.Data.PinMemory, c.Train.NonBlocking = tc.pinned, tc.nbl
			c.Cuda.Graphs = tc.graphs
			w := &driverWatch{}
			opt := Options{Out: new(bytes.Buffer), wrapBackend: func(b Backend) Backend { w.Backend = b; return w }}
			if _, err := Run(context.Background(), c, opt); err != nil {
				t.Fatal(err)
			}
			recs := epochRecords(t, c.Train.Out)
			if len(recs) != len(w.epochs) || len(recs) != c.Train.Epochs {
				t.Fatalf("%d records, %d epochs watched, want %d", len(recs), len(w.epochs), c.Train.Epochs)
			}
			for i, m := range recs {
				e := w.epochs[i]
				d := e.last.Sub(e.first)
				if e.steps != 4 || d.Launches == 0 || d.H2DBytes == 0 { // 30 images, batch 8
					t.Fatalf("epoch %d: watched %d steps, %+v: the watch saw no work", m.Epoch, e.steps, d)
				}
				if m.GPU == nil {
					t.Fatalf("epoch %d: no gpu counters", m.Epoch)
				}
				g := *m.GPU
				t.Logf("epoch %d: %d steps, driver %+v; record %+v", m.Epoch, e.steps, d, g)
				n := float64(e.steps)
				for _, f := range []struct {
					name   string
					rec    float64
					driver uint64
				}{
					{"launches_per_step", g.LaunchesPerStep, d.Launches},
					{"host_syncs_per_step", g.HostSyncsPerStep, d.HostSyncs},
					{"allocs_per_step", g.AllocsPerStep, d.Allocs},
					{"h2d_bytes_per_step", g.H2DBytesPerStep, d.H2DBytes},
					{"d2h_bytes_per_step", g.D2HBytesPerStep, d.D2HBytes},
				} {
					if math.Abs(f.rec*n-float64(f.driver)) > 1e-9*float64(f.driver) {
						t.Errorf("epoch %d: %s %g x %d steps, the driver counted %d", m.Epoch, f.name, f.rec, e.steps, f.driver)
					}
				}
				if want := tc.graphs != cudaops.GraphsOff; g.Graph != want {
					t.Errorf("epoch %d: graph %v with cuda.graphs %s, want %v", m.Epoch, g.Graph, tc.graphs, want)
				}
			}
		})
	}
}

// driverWatch reads the driver's counters before each epoch's first step
// starts and after each step is waited for; an evaluation ends the epoch's
// training.
type driverWatch struct {
	Backend
	epochs []watched
	cur    *watched
}

type watched struct {
	first, last cudaops.DriverCounters
	steps       int
}

func (w *driverWatch) Start(in model.Input, lr float32) (model.Pending, error) {
	if w.cur == nil {
		w.cur = &watched{first: cudaops.ReadDriverCounters()}
	}
	p, err := w.Backend.Start(in, lr)
	if err != nil {
		return nil, err
	}
	w.cur.steps++
	return watchedPending{p, w.cur}, nil
}

func (w *driverWatch) Eval(in model.Input) (model.EvalResult, error) {
	if w.cur != nil {
		w.epochs = append(w.epochs, *w.cur)
		w.cur = nil
	}
	return w.Backend.Eval(in)
}

type watchedPending struct {
	model.Pending
	e *watched
}

func (p watchedPending) Wait() (model.StepResult, model.StepTimes, error) {
	r, t, err := p.Pending.Wait()
	p.e.last = cudaops.ReadDriverCounters()
	return r, t, err
}

// Results reads the steps' deferred figures (model.Deferred), which the
// trainer does at the epoch's end: that wait is the epoch's too.
func (w *driverWatch) Results() ([]model.Outcome, error) {
	out, err := w.Backend.(model.Deferred).Results()
	if w.cur != nil {
		w.cur.last = cudaops.ReadDriverCounters()
	}
	return out, err
}
