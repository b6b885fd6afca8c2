package trainer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"stoke/config"
	"stoke/model"
)

// progressiveTiny is tinyConfig trained over 4 epochs at 8, 8, 12 and 16 px
// (data.progressive 8 -> 16 from epoch 1 to 3, multiples of 4) and
// evaluated at 12 px: 4 steps an epoch.
func progressiveTiny(t *testing.T) config.Config {
	c := tinyConfig(t)
	c.Train.Epochs = 4
	c.Data.SizeRamp = config.SizeRamp{Start: 8, End: 16, StartEpoch: 1, EndEpoch: 3, Step: 4}
	c.Data.EvalSize = 12
	return c
}

var progressiveSides = []int{8, 8, 12, 16}

// sideLog stands between the loop and each model the run builds and
// records the side of every batch it is given (from the batch's length).
type sideLog struct {
	Backend
	batch int
	mu    *sync.Mutex
	train *[]int
	eval  *[]int
}

func (l *sideLog) side(in model.Input) int {
	n := len(in.X) + len(in.U8)
	return int(math.Round(math.Sqrt(float64(n / (3 * l.batch)))))
}

func (l *sideLog) Start(in model.Input, lr float32) (model.Pending, error) {
	l.mu.Lock()
	*l.train = append(*l.train, l.side(in))
	l.mu.Unlock()
	return l.Backend.Start(in, lr)
}

func (l *sideLog) Eval(in model.Input) (model.EvalResult, error) {
	l.mu.Lock()
	*l.eval = append(*l.eval, l.side(in))
	l.mu.Unlock()
	return l.Backend.Eval(in)
}

// TestProgressiveSidesAreAsScheduled: each epoch trains at its side of the
// ramp and evaluates at data.eval_size, and says so in metrics.jsonl, on
// its epoch line and in the resolved config.yaml; `train eval` of the last
// checkpoint (a model built at the eval side only) gives the run's own last
// validation figures, so the evaluation model had the trained weights and
// BatchNorm statistics.
func TestProgressiveSidesAreAsScheduled(t *testing.T) {
	for _, arch := range []string{"cnn", "resnet20"} {
		t.Run(arch, func(t *testing.T) {
			c := progressiveTiny(t)
			c.Model.Arch = arch
			var mu sync.Mutex
			var train, eval []int
			var out bytes.Buffer
			opt := Options{Out: &out, wrapBackend: func(b Backend) Backend {
				return &sideLog{Backend: b, batch: c.Data.BatchSize, mu: &mu, train: &train, eval: &eval}
			}}
			if _, err := Run(context.Background(), c, opt); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			var want []int
			for _, s := range progressiveSides {
				want = append(want, s, s, s, s) // 4 steps an epoch
			}
			if !slices.Equal(train, want) {
				t.Errorf("training batches' sides %v, want %v", train, want)
			}
			if len(eval) == 0 || slices.ContainsFunc(eval, func(s int) bool { return s != 12 }) {
				t.Errorf("evaluation batches' sides %v, want 12 each", eval)
			}
			ms := metricsLines(t, c.Train.Out)
			for i, m := range ms {
				if m.ImageSize != progressiveSides[i] || m.EvalSize != 12 {
					t.Errorf("metrics.jsonl epoch %d: image_size %d eval_size %d, want %d and 12", m.Epoch, m.ImageSize, m.EvalSize, progressiveSides[i])
				}
				line := fmt.Sprintf("epoch %d/4  %d px (eval 12 px)  train loss", i+1, progressiveSides[i])
				if !strings.Contains(out.String(), line) {
					t.Errorf("no epoch line %q in\n%s", line, out.String())
				}
			}
			if line := "image sides: 8 px epochs 1-2, 12 px epoch 3, 16 px epoch 4; evaluation at 12 px\n"; !strings.Contains(out.String(), line) {
				t.Errorf("no line %q in\n%s", line, out.String())
			}
			saved := readFile(t, filepath.Join(c.Train.Out, "config.yaml"))
			for _, s := range []string{"eval_size: 12", "progressive:", "start: 8", "end: 16", "start_epoch: 1", "end_epoch: 3", "step: 4"} {
				if !strings.Contains(saved, s) {
					t.Errorf("config.yaml lacks %q", s)
				}
			}
			rep, err := Evaluate(context.Background(), c.Train.Out, "", "cpu", io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			last := ms[len(ms)-1]
			if rep.Top1 != last.ValTop1 || math.Abs(rep.Loss-last.ValLoss) > 1e-12*max(1, math.Abs(last.ValLoss)) {
				t.Errorf("train eval of the last checkpoint: loss %v top1 %v; the run's last epoch: %v, %v", rep.Loss, rep.Top1, last.ValLoss, last.ValTop1)
			}
		})
	}
}

// TestProgressiveInterruptMidRampResumesExactly: a progressive run
// interrupted inside the ramp — in an 8 px epoch before the change, at the
// boundary into the 12 px epoch, inside the 12 px epoch (resumed: the model
// built at 12 px from the checkpoint) — and resumed, ends with the
// checkpoint bytes and metrics of the uninterrupted run.
func TestProgressiveInterruptMidRampResumesExactly(t *testing.T) {
	for _, arch := range []string{"cnn", "resnet20"} {
		t.Run(arch, func(t *testing.T) {
			tiny := func() config.Config {
				c := progressiveTiny(t)
				c.Model.Arch = arch
				if arch == "resnet20" {
					c.Optim.Nesterov, c.Optim.DecayNormAndBias = true, false
				}
				return c
			}
			full := tiny()
			runOK(t, full)
			wantW, wantO := checkpointBytes(t, full.Train.Out)
			wantM := metricsLines(t, full.Train.Out)
			ks := []int{6, 8, 10}
			if arch == "resnet20" {
				ks = []int{10} // its BatchNorm buffers and momenta across the rebuild
			}
			for _, k := range ks {
				c := tiny()
				interruptAfter(t, fmt.Sprintf("k=%d", k), c, Options{}, k)
				c.Train.Resume = c.Train.Out
				runOK(t, c)
				w, o := checkpointBytes(t, c.Train.Out)
				if !bytes.Equal(w, wantW) {
					t.Errorf("k=%d: model.safetensors differs from the uninterrupted run's", k)
				}
				if !bytes.Equal(o, wantO) {
					t.Errorf("k=%d: optimizer.safetensors differs from the uninterrupted run's", k)
				}
				got := metricsLines(t, c.Train.Out)
				sameMetrics(t, fmt.Sprintf("k=%d", k), got, wantM)
				for i := range got {
					if got[i].ImageSize != wantM[i].ImageSize || got[i].EvalSize != wantM[i].EvalSize {
						t.Errorf("k=%d epoch %d: sides %d/%d, want %d/%d", k, i+1, got[i].ImageSize, got[i].EvalSize, wantM[i].ImageSize, wantM[i].EvalSize)
					}
				}
			}
		})
	}
}
