package trainer

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"stoke/augment"
	"stoke/config"
	"stoke/model"
)

// The invariants the cnn's tests check (uint8 batches, exact resume,
// bit-identical batches and weights whatever the worker count, bad input)
// hold for the ResNets too: these tests run them on resnet20, the ResNet
// with every kind of layer (BatchNorm with its buffers, strided and 1x1
// projection convs, residual adds), at the tiny size of tinyConfig (16 px,
// batch 8, a short last batch); exact resume and padded rows also on
// resnet18 with the imagenet stem (resnetVariants).

// resnetTiny is tinyConfig with resnet20 and the He et al. recipe's
// optimizer settings (Nesterov, no decay on BatchNorm and biases, multistep).
func resnetTiny(t *testing.T) config.Config {
	t.Helper()
	c := tinyConfig(t)
	c.Model.Arch = "resnet20"
	c.Optim.Nesterov, c.Optim.DecayNormAndBias = true, false
	c.Optim.Schedule, c.Optim.Milestones = "multistep", []int{1}
	return c
}

// resnetVariants are the layouts the arch-sensitive invariants (exact
// resume, padded rows) run on: resnet20, and resnet18 with the imagenet
// stem, whose 7x7 stride-2 conv and 3x3 max-pool resnet20 lacks (at 16 px
// its last stages run at 1x1). resnet18 at batch 16 (2 steps an epoch,
// 16 + 14): its steps cost what its 11M parameters do, not its pixels, so
// it takes as few as the invariants need (TestResNetIgnoresPaddedRows took
// 267 s on resnet18, 20 s on resnet20, under -race on a busy 2-core machine).
var resnetVariants = []struct {
	name string
	set  func(*config.Config)
}{
	{"resnet20", func(*config.Config) {}},
	{"resnet18-imagenet", func(c *config.Config) {
		c.Model.Arch, c.Model.Stem, c.Data.BatchSize = "resnet18", "imagenet", 16
	}},
}

// skipShort skips the resnet18 variant under -short: its every model costs
// about 20 s of CPU under -race (its first step and evaluation on 11M
// parameters, whatever the batch or the number of steps), the most of the
// package. .ci/run and the README's `go test -race ./...` run it.
func skipShort(t *testing.T, variant string) {
	if testing.Short() && variant != "resnet20" {
		t.Skip("-short: the resnet18 variant (resnet20 runs the same invariant)")
	}
}

// batchLog stands between the loop and the model and keeps a copy of every
// batch the model is given, and the loss of every step.
type batchLog struct {
	Backend
	mu     sync.Mutex
	train  [][]float32
	labels [][]int32
	eval   [][]float32
	losses []float64
	ns     []int
}

func (l *batchLog) Start(in model.Input, lr float32) (model.Pending, error) {
	// The batch is copied before Start: the loader may reuse it once Start
	// has returned.
	l.mu.Lock()
	l.train = append(l.train, l.floats(in))
	l.labels = append(l.labels, slices.Clone(in.Labels[:in.N]))
	l.ns = append(l.ns, in.N)
	l.mu.Unlock()
	p, err := l.Backend.Start(in, lr)
	if err != nil {
		return p, err
	}
	return loggedStep{p, l}, nil
}

// floats is the batch as the model computes on it: a uint8 batch
// normalized as the CPU model does it (bit for bit), with ImageNet's
// statistics, which the tests' configs keep.
func (l *batchLog) floats(in model.Input) []float32 {
	if in.U8 == nil {
		return slices.Clone(in.X)
	}
	x := make([]float32, len(in.U8))
	size := int(math.Sqrt(float64(len(in.U8) / 3 / (len(in.Labels)))))
	augment.NormalizeU8(x, in.U8, size, augment.ImageNetMean, augment.ImageNetStd)
	return x
}

// loggedStep records its step's loss when the loop waits for it.
type loggedStep struct {
	model.Pending
	l *batchLog
}

func (s loggedStep) Wait() (model.StepResult, model.StepTimes, error) {
	r, t, err := s.Pending.Wait()
	s.l.mu.Lock()
	s.l.losses = append(s.l.losses, r.Loss)
	s.l.mu.Unlock()
	return r, t, err
}

func (l *batchLog) Eval(in model.Input) (model.EvalResult, error) {
	l.mu.Lock()
	l.eval = append(l.eval, l.floats(in))
	l.mu.Unlock()
	return l.Backend.Eval(in)
}

// logged runs c with a batchLog, failing the test on an error.
func logged(t *testing.T, c config.Config) (*batchLog, *Summary) {
	t.Helper()
	l := &batchLog{}
	sum, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer), wrapBackend: func(b Backend) Backend { l.Backend = b; return l }})
	if err != nil {
		t.Fatalf("%s, %d workers, %s batches: %v", c.Model.Arch, c.Data.Workers, c.Data.BatchDType, err)
	}
	return l, sum
}

// checkpointBytes is the newest checkpoint's weights and optimizer state,
// as written.
func checkpointBytes(t *testing.T, run string) (weights, optim []byte) {
	t.Helper()
	dir, ok := latestCheckpoint(run)
	if !ok {
		t.Fatalf("no checkpoint in %s", run)
	}
	return []byte(readFile(t, filepath.Join(dir, weightsFile))), []byte(readFile(t, filepath.Join(dir, optimFile)))
}

func sameBatches(t *testing.T, what string, got, want [][]float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d batches, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(f32bytes(got[i]), f32bytes(want[i])) {
			t.Fatalf("%s: batch %d differs", what, i)
		}
	}
}

func sameMetrics(t *testing.T, what string, got, want []EpochMetrics) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d metrics lines, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Epoch != w.Epoch || g.TrainLoss != w.TrainLoss || g.TrainAcc != w.TrainAcc || g.ValLoss != w.ValLoss || g.ValTop1 != w.ValTop1 || g.ValTop5 != w.ValTop5 {
			t.Errorf("%s: epoch %d: metrics %+v, want %+v", what, w.Epoch, g, w)
		}
	}
}

// TestResNetSameWhateverWorkers: with truncated and corrupt JPEGs in the
// data (bad_images: skip), resnet20 runs on 0, 1 and 4 workers are given
// the same batches, bit for bit (training and evaluation), skip the same
// files, and end with the same checkpoint bytes and metrics. One epoch:
// the next epoch's order is drawn the same way whatever the workers, which
// the cnn's TestBadJPEGsChangeNothingElse checks over two.
func TestResNetSameWhateverWorkers(t *testing.T) {
	root := datasetWithBadJPEGs(t)
	var want *batchLog
	var wantW, wantO []byte
	var wantM []EpochMetrics
	var wantSkipped []string
	for _, w := range []int{4, 0, 1} {
		c := resnetTiny(t)
		c.Data.Root, c.Data.BadImages, c.Data.Workers = root, "skip", config.Workers(w)
		c.Train.Epochs = 1
		l, sum := logged(t, c)
		var skipped []string
		for _, m := range sum.Epochs {
			skipped = append(skipped, m.SkippedImages...)
		}
		wb, ob := checkpointBytes(t, c.Train.Out)
		m := metricsLines(t, c.Train.Out)
		if want == nil {
			if len(skipped) == 0 {
				t.Fatal("no image was skipped: the test's bad files all decode")
			}
			want, wantW, wantO, wantM, wantSkipped = l, wb, ob, m, skipped
			continue
		}
		what := fmt.Sprintf("%d workers against 4", w)
		sameBatches(t, what+", training", l.train, want.train)
		sameBatches(t, what+", evaluation", l.eval, want.eval)
		for i := range want.labels {
			if !slices.Equal(l.labels[i], want.labels[i]) {
				t.Fatalf("%s: labels of batch %d differ", what, i)
			}
		}
		if !slices.Equal(skipped, wantSkipped) {
			t.Errorf("%s: skipped %v, want %v", what, skipped, wantSkipped)
		}
		if !bytes.Equal(wb, wantW) || !bytes.Equal(ob, wantO) {
			t.Fatalf("%s: the checkpoint's weights or optimizer state differ", what)
		}
		sameMetrics(t, what, m, wantM)
	}
}

// TestResNetInterruptAtAnyStepResumesExactly: a resnet20 run cancelled
// after step k (inside the first epoch, at its last step, inside the
// second) and resumed, on another worker count, ends with checkpoint files
// byte for byte those of an uninterrupted run (the shared reference run),
// and the same metrics. The resnet18 run (1 epoch of 2 steps) is stopped
// inside its epoch only, after its first step: where a run stops, and the
// schedule's milestone, do not depend on the arch (resnet20 and the cnn's
// test cover every kind of step); what resnet18 adds is its own state (the
// imagenet stem, layer4, their BatchNorm buffers and momenta) written and
// read back mid-epoch, and its steps cost ten of resnet20's (resnetVariants;
// at 2 epochs, stopped inside the second, it took 534 s under -race at load
// 15-30, the most of any test).
func TestResNetInterruptAtAnyStepResumesExactly(t *testing.T) {
	for _, v := range resnetVariants {
		t.Run(v.name, func(t *testing.T) {
			skipShort(t, v.name)
			tiny := func() config.Config { c := resnetTiny(t); v.set(&c); return c }
			ks, workers := []int{2, 4, 7}, []int{0, 1, 4}
			var wantW, wantO []byte
			var wantM []EpochMetrics
			if v.name == "resnet20" {
				ref := resnet20Reference(t) // 30 images, batch 8: 4 steps an epoch, 8 in all
				wantW, wantO, wantM = ref.weights, ref.optim, ref.metrics
			} else {
				ks, workers = []int{1}, []int{4}
				full := tiny()
				full.Train.Epochs = 1 // batch 16: 2 steps
				runOK(t, full)
				wantW, wantO = checkpointBytes(t, full.Train.Out)
				wantM = metricsLines(t, full.Train.Out)
			}
			for i, k := range ks {
				c := tiny()
				if v.name != "resnet20" {
					c.Train.Epochs = 1
				}
				c.Data.Workers = config.Workers(workers[i])
				interruptAfter(t, fmt.Sprintf("k=%d", k), c, Options{}, k)
				c.Train.Resume, c.Data.Workers = c.Train.Out, 2
				runOK(t, c)
				w, o := checkpointBytes(t, c.Train.Out)
				if !bytes.Equal(w, wantW) {
					t.Errorf("k=%d: model.safetensors differs from the uninterrupted run's", k)
				}
				if !bytes.Equal(o, wantO) {
					t.Errorf("k=%d: optimizer.safetensors differs from the uninterrupted run's", k)
				}
				sameMetrics(t, fmt.Sprintf("k=%d", k), metricsLines(t, c.Train.Out), wantM)
			}
		})
	}
}

// TestResNetUint8MatchesFloat32: resnet20 trained on uint8 batches
// (data.batch_dtype uint8: the workers write bytes, the loop normalizes
// them before the step) is given every batch's valid rows within the uint8
// rounding of the float32 batches (half a level of 255, divided by std);
// the rows past n of a short batch differ (zeros against the normalized
// zero byte, -mean/std), which TestResNetIgnoresPaddedRows shows cannot
// matter. On the same initial weights the first step's loss is within what
// that rounding moves it.
//
// The float32 run is the shared reference run (batch_dtype auto, which is
// float32 on the cpu; were it uint8, worst would be 0 and the test fail).
func TestResNetUint8MatchesFloat32(t *testing.T) {
	l32 := resnet20Reference(t).log
	c8 := resnetTiny(t)
	c8.Data.BatchDType = "uint8"
	l8, _ := logged(t, c8)
	if !strings.Contains(readFile(t, filepath.Join(c8.Train.Out, "config.yaml")), "batch_dtype: uint8") {
		t.Fatal("the uint8 run's config does not say batch_dtype: uint8")
	}
	std := augment.ImageNetStd
	tol := 0.5/255/float64(min(std[0], std[1], std[2])) + 1e-5
	row := 3 * c8.Data.ImageSize * c8.Data.ImageSize
	short := 0
	worst := 0.0
	if len(l8.train) != len(l32.train) || len(l8.train) == 0 {
		t.Fatalf("%d uint8 batches, %d float32", len(l8.train), len(l32.train))
	}
	for i := range l32.train {
		n := l32.ns[i]
		if l8.ns[i] != n || !slices.Equal(l8.labels[i], l32.labels[i]) {
			t.Fatalf("batch %d: uint8 run has %d samples, labels %v; float32 %d, %v", i, l8.ns[i], l8.labels[i], n, l32.labels[i])
		}
		if n < c8.Data.BatchSize {
			short++
		}
		for j := range l32.train[i][:n*row] {
			worst = max(worst, math.Abs(float64(l8.train[i][j]-l32.train[i][j])))
		}
	}
	t.Logf("valid rows of %d training batches (%d short): worst |uint8 - float32| %.5f (bound %.5f)", len(l32.train), short, worst, tol)
	if worst > tol || worst == 0 {
		t.Errorf("valid rows differ by %.5f: want within the uint8 rounding %.5f, and not 0 (else the uint8 path was not taken)", worst, tol)
	}
	if short == 0 {
		t.Error("no short batch: the padded rows are not tested")
	}
	for i := range l32.losses {
		t.Logf("step %d n=%d: loss uint8 %.6f float32 %.6f", i, l32.ns[i], l8.losses[i], l32.losses[i])
	}
	// Measured 0.27% at the first step (the same initial weights); later
	// steps drift apart as two runs on slightly different data do.
	if d := math.Abs(l8.losses[0]-l32.losses[0]) / l32.losses[0]; d > 0.01 {
		t.Errorf("first step's loss: uint8 %.6f, float32 %.6f (%.2g apart; want within 1%%)", l8.losses[0], l32.losses[0], d)
	}
}

// TestResNetIgnoresPaddedRows: resnet20's (and resnet18's) training and evaluation steps on
// a short batch give the same loss, predictions, weights, optimizer state
// and BatchNorm running statistics, bit for bit, whatever the rows past n
// hold: zeros (float32 batches), -mean/std (uint8 batches normalized) or
// garbage. The batch statistics are of the valid rows.
func TestResNetIgnoresPaddedRows(t *testing.T) {
	for _, v := range resnetVariants {
		t.Run(v.name, func(t *testing.T) {
			skipShort(t, v.name)
			c := resnetTiny(t)
			v.set(&c)
			c.Data.BatchSize = 8 // n valid rows and 3 padded ones, on both variants
			spec, opt := c.ModelSpec(3), c.ModelOptions()
			row := 3 * spec.InputSize * spec.InputSize
			const n = 5
			rng := rand.New(rand.NewPCG(3, 4))
			x := make([]float32, opt.Batch*row)
			for i := range x[:n*row] {
				x[i] = float32(rng.NormFloat64())
			}
			labels := []int32{0, 1, 2, 1, 0, 0, 0, 0}
			pads := map[string]func(i int) float32{
				"zeros": func(int) float32 { return 0 },
				"-mean/std": func(i int) float32 {
					ch := (i / (spec.InputSize * spec.InputSize)) % 3
					return -augment.ImageNetMean[ch] / augment.ImageNetStd[ch]
				},
				"garbage": func(i int) float32 { return float32(1e3 * math.Sin(float64(i))) },
			}
			type outcome struct {
				loss    []float64
				pred    [][]int32
				weights []byte
			}
			steps, evalAt := 3, 1
			if v.name != "resnet20" {
				// zeros against garbage, one step and an eval after it: the
				// step's gradients, BatchNorm statistics and momentum are
				// compared bit for bit (the optimizer state after one step),
				// and resnet20 shows the later steps. resnet18's steps cost
				// ten of resnet20's (resnetVariants); at batch 16 and two
				// steps this variant took 311 s under -race at load 15-30.
				delete(pads, "-mean/std")
				steps, evalAt = 1, 0
			}
			results := map[string]outcome{}
			for name, pad := range pads {
				m, err := model.New(spec, opt)
				if err != nil {
					t.Fatal(err)
				}
				xp := slices.Clone(x)
				for i := n * row; i < len(xp); i++ {
					xp[i] = pad(i)
				}
				var o outcome
				for step := range steps {
					in := model.Input{X: xp, Labels: labels, N: n}
					p, err := m.Start(in, 0.05)
					if err != nil {
						t.Fatal(err)
					}
					res, _, err := p.Wait()
					if err != nil {
						t.Fatal(err)
					}
					o.loss = append(o.loss, res.Loss)
					if step == evalAt {
						ev, err := m.Eval(in)
						if err != nil {
							t.Fatal(err)
						}
						o.loss = append(o.loss, ev.LossSum)
						o.pred = append(o.pred, ev.Pred)
					}
				}
				params, optim, err := m.State()
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range append(params, optim...) {
					o.weights = append(o.weights, f32bytes(p.Data)...)
				}
				m.Close()
				results[name] = o
			}
			want := results["zeros"]
			for name, o := range results {
				if !slices.Equal(o.loss, want.loss) || !slices.EqualFunc(o.pred, want.pred, slices.Equal) || !bytes.Equal(o.weights, want.weights) {
					t.Errorf("padding %s: losses %v, predictions %v (zeros: %v, %v), weights equal %v", name, o.loss, o.pred, want.loss, want.pred, bytes.Equal(o.weights, want.weights))
				}
			}
		})
	}
}

// TestResNetBadInputs runs docs/bad-input.md's table (badInputs) on
// resnet20, as TestBadInputs does on the cnn: undecodable files stop the
// run naming them or are skipped and listed (a short batch for the model),
// decodable oddities train. TestBadInputs runs each row on its own; here,
// where what matters is what reaches resnet20 (its BatchNorm on the short
// batches a skip leaves), the undecodable files are put in one dataset,
// run once per policy, and of the decodable rows, which differ only in how
// the loader decodes them before the same resize, the two extremes (1x1,
// CMYK) share a third run. It ran each row and policy as its own resnet20
// run, 10 of them: 141 s under -race at load 15-30, 48 s as 3.
func TestResNetBadInputs(t *testing.T) {
	type bad struct{ path, want string }
	put := func(t *testing.T, c *config.Config, decodable bool) []bad {
		c.Data.Root = copyTinyDataset(t)
		dir := filepath.Join(c.Data.Root, "train", firstClass(t, c.Data.Root))
		var put []bad
		for _, tc := range badInputs {
			if tc.decodable == decodable && (!decodable || tc.name == "1x1 image" || tc.name == "CMYK JPEG") {
				put = append(put, bad{tc.make(t, dir), tc.want})
			}
		}
		return put
	}
	t.Run("decodable", func(t *testing.T) {
		c := resnetTiny(t)
		c.Train.Epochs, c.Data.BadImages = 1, "fail"
		if put(t, &c, true); t.Failed() {
			return
		}
		if _, err := runWithin(t, c); err != nil {
			t.Fatalf("a decodable input stopped the run: %v", err)
		}
	})
	for _, policy := range []string{"fail", "skip"} {
		t.Run("undecodable/"+policy, func(t *testing.T) {
			c := resnetTiny(t)
			c.Train.Epochs, c.Data.BadImages = 1, policy
			files := put(t, &c, false)
			sum, err := runWithin(t, c)
			if policy == "fail" {
				for _, f := range files {
					if err != nil && strings.Contains(err.Error(), filepath.Base(f.path)) {
						if !strings.Contains(err.Error(), f.want) {
							t.Fatalf("error %v names %s but does not say %q", err, filepath.Base(f.path), f.want)
						}
						return
					}
				}
				t.Fatalf("error %v, want one naming one of %v and saying why", err, files)
			}
			if err != nil {
				t.Fatalf("bad_images: skip, but the run failed: %v", err)
			}
			var want []string
			for _, f := range files {
				want = append(want, f.path)
			}
			got := slices.Sorted(slices.Values(sum.Epochs[0].SkippedImages))
			if slices.Sort(want); !slices.Equal(got, want) {
				t.Fatalf("skipped %v, want %v", got, want)
			}
		})
	}
}
