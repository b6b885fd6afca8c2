package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"stoke/config"
	"stoke/data"
	"stoke/model"
)

// tinyDataset is generated once for all tests of the package.
var tinyDataset = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "stoke-trainer-test-")
	if err != nil {
		return "", err
	}
	root := filepath.Join(dir, "ds")
	return root, data.Generate(root, data.SynthOptions{Classes: 3, Train: 10, Val: 4, Size: 24, Seed: 7, Quality: 90})
})

// tinyConfig is a run small enough for -race on two cores: 30 training
// images of 16 px, one conv block.
func tinyConfig(t *testing.T) config.Config {
	t.Helper()
	root, err := tinyDataset()
	if err != nil {
		t.Fatal(err)
	}
	c := config.Default()
	c.Data.Root = root
	c.Data.ImageSize = 16
	c.Data.BatchSize = 8 // 30 images: the last batch is short
	c.Data.Workers = 2
	c.Model.Conv = []model.ConvSpec{{Channels: 4, Kernel: 3, Pool: true}}
	c.Optim.LR = 0.05
	c.Train.Epochs = 2
	c.Train.Out = filepath.Join(t.TempDir(), "run")
	c.Train.Progress = "plain"
	return c
}

// interruptAfter runs c with opt, cancelled once step k has run, and
// returns its error, failing t (naming what) unless the run ended with an
// InterruptedError.
func interruptAfter(t *testing.T, what string, c config.Config, opt Options, k int) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if opt.Out == nil {
		opt.Out = new(bytes.Buffer)
	}
	opt.afterStep = func(step int) {
		if step == k {
			cancel()
		}
	}
	_, err := Run(ctx, c, opt)
	var intr *InterruptedError
	if !errors.As(err, &intr) {
		t.Fatalf("%s: interrupted after step %d: error %v, want an InterruptedError", what, k, err)
	}
	return err
}

func TestRunWritesWhatARunLeavesBehind(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c := tinyConfig(t)
	var out bytes.Buffer
	sum, err := Run(context.Background(), c, Options{Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(sum.Epochs) != 2 {
		t.Fatalf("%d epochs reported, want 2", len(sum.Epochs))
	}
	m := sum.Epochs[1]
	if m.Epoch != 2 || m.ImgPerSec <= 0 || m.WaitShare < 0 || m.ComputeShare <= 0 || m.WaitShare+m.ComputeShare > 1.0001 {
		t.Errorf("implausible metrics %+v", m)
	}
	if m.ValTop1 > m.ValTop5 {
		t.Errorf("top-1 %v above top-5 %v", m.ValTop1, m.ValTop5)
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(c.Train.Out, "metrics.jsonl"))), "\n")
	if len(lines) != 2 {
		t.Errorf("metrics.jsonl has %d lines, want 2", len(lines))
	}
	saved, err := config.Load(filepath.Join(c.Train.Out, "config.yaml"))
	if err != nil {
		t.Fatalf("saved config: %v", err)
	}
	if saved.Data.Root != c.Data.Root || saved.Train.Epochs != 2 {
		t.Errorf("saved config differs from the run's: %+v", saved.Data)
	}
	dir, ok := latestCheckpoint(c.Train.Out)
	if !ok || filepath.Base(dir) != "epoch-0002" {
		t.Fatalf("latest checkpoint %q, want epoch-0002", dir)
	}
	params, _, err := model.ReadSafetensors(filepath.Join(dir, weightsFile))
	if err != nil || len(params) == 0 {
		t.Fatalf("weights: %v (%d tensors)", err, len(params))
	}
	if !strings.Contains(out.String(), "epoch 2/2") {
		t.Errorf("no epoch line in the output:\n%s", out.String())
	}

	// The same folder again without --resume must not overwrite it.
	if _, err := Run(context.Background(), c, Options{Out: &out}); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("rerun into a used run folder: error %v, want one suggesting --resume", err)
	}
}

// TestResumeIsExact: a run stopped after epoch 1 and resumed ends with the
// same weights, bit for bit, as an uninterrupted run.
func TestResumeIsExact(t *testing.T) {
	full := tinyConfig(t)
	if _, err := Run(context.Background(), full, Options{Out: new(bytes.Buffer)}); err != nil {
		t.Fatal(err)
	}

	part := tinyConfig(t)
	part.Data.Workers = 0 // a different worker count must not matter either
	stopAfterOne := func(m EpochMetrics) bool { return m.Epoch < 1 }
	if _, err := Run(context.Background(), part, Options{Out: new(bytes.Buffer), AfterEpoch: stopAfterOne}); err != nil {
		t.Fatal(err)
	}
	if dir, _ := latestCheckpoint(part.Train.Out); filepath.Base(dir) != "epoch-0001" {
		t.Fatalf("stopped run's checkpoint is %q, want epoch-0001", dir)
	}
	part.Train.Resume = part.Train.Out
	var out bytes.Buffer
	if _, err := Run(context.Background(), part, Options{Out: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "resumed from") {
		t.Errorf("no resume message:\n%s", out.String())
	}
	a := lastWeights(t, full.Train.Out)
	b := lastWeights(t, part.Train.Out)
	if len(a) != len(b) {
		t.Fatalf("%d vs %d tensors", len(a), len(b))
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			t.Fatalf("tensor %d: %s vs %s", i, a[i].Name, b[i].Name)
		}
		for j := range a[i].Data {
			if a[i].Data[j] != b[i].Data[j] {
				t.Fatalf("%s[%d]: uninterrupted %v, resumed %v", a[i].Name, j, a[i].Data[j], b[i].Data[j])
			}
		}
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(part.Train.Out, "metrics.jsonl"))), "\n")
	if len(lines) != 2 {
		t.Errorf("resumed run's metrics.jsonl has %d lines, want 2 (one per epoch)", len(lines))
	}
}

func TestResumeRefusesAnIncompatibleConfig(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err != nil {
		t.Fatal(err)
	}
	c.Train.Resume = c.Train.Out
	c.Optim.LR = 0.2
	_, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)})
	if err == nil || !strings.Contains(err.Error(), "optim.lr") {
		t.Errorf("resume with another lr: error %v, want one naming optim.lr", err)
	}
	c.Optim.LR = 0.05
	c.Train.Resume = filepath.Join(t.TempDir(), "nothing")
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err == nil || !strings.Contains(err.Error(), "nothing") {
		t.Errorf("resume from a missing folder: error %v, want one naming it", err)
	}
}

func TestCorruptImageStopsTheRunNamingTheFile(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	src, err := tinyDataset()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "ds")
	if err := os.CopyFS(root, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	// Truncate one training JPEG to half its bytes.
	var victim string
	filepath.WalkDir(filepath.Join(root, "train"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && victim == "" && strings.HasSuffix(p, ".jpg") {
			victim = p
		}
		return nil
	})
	b := []byte(readFile(t, victim))
	if err := os.WriteFile(victim, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	c := tinyConfig(t)
	c.Data.Root = root
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), filepath.Base(victim)) {
			t.Errorf("error %v, want one naming %s", err, victim)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run hung on a corrupt image")
	}
}

func TestBadSettingsAreClearErrors(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Device = "cuda"
	_, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)})
	if newCUDADevice == nil && (!errors.Is(err, ErrNoCUDA) || !strings.Contains(err.Error(), "-tags stokecuda")) {
		t.Errorf("cuda in a CPU build: %v", err)
	}
	if newCUDADevice != nil && err == nil && !cudaUsable() {
		t.Errorf("cuda without a usable GPU: no error")
	}
	c = tinyConfig(t)
	c.Data.Root = filepath.Join(t.TempDir(), "missing")
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err == nil || !strings.Contains(err.Error(), "missing") || !strings.Contains(err.Error(), "gen-data") {
		t.Errorf("missing dataset: %v", err)
	}
	c = tinyConfig(t)
	c.Data.BatchSize = 0
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err == nil || !strings.Contains(err.Error(), "data.batch_size") {
		t.Errorf("batch size 0: %v", err)
	}
}

func TestCancelStopsCleanly(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c := tinyConfig(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, c, Options{Out: new(bytes.Buffer)}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: error %v, want context.Canceled", err)
	}
}

func lastWeights(t *testing.T, run string) []model.NamedTensor {
	t.Helper()
	dir, ok := latestCheckpoint(run)
	if !ok {
		t.Fatalf("no checkpoint in %s", run)
	}
	p, _, err := model.ReadSafetensors(filepath.Join(dir, weightsFile))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestInterruptAtAnyStepResumesExactly: a run cancelled after step k writes
// a checkpoint, and resuming it ends with the weights and metrics of an
// uninterrupted run, bit for bit, for k inside an epoch and at its end.
func TestInterruptAtAnyStepResumesExactly(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	full := tinyConfig(t) // 30 images, batch 8: 4 steps an epoch, 8 in all
	if _, err := Run(context.Background(), full, Options{Out: new(bytes.Buffer)}); err != nil {
		t.Fatal(err)
	}
	want := lastWeights(t, full.Train.Out)
	wantMetrics := metricsLines(t, full.Train.Out)
	for _, k := range []int{1, 3, 4, 6} {
		c := tinyConfig(t)
		err := interruptAfter(t, fmt.Sprintf("k=%d", k), c, Options{}, k)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("k=%d: error %v, want one wrapping context.Canceled", k, err)
		}
		if !strings.Contains(err.Error(), "--resume "+c.Train.Out) {
			t.Errorf("k=%d: %q does not say how to resume", k, err)
		}
		c.Train.Resume = c.Train.Out
		if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err != nil {
			t.Fatalf("k=%d: resume: %v", k, err)
		}
		got := lastWeights(t, c.Train.Out)
		for i := range want {
			for j := range want[i].Data {
				if got[i].Data[j] != want[i].Data[j] {
					t.Fatalf("k=%d: %s[%d] = %v after resume, %v uninterrupted", k, want[i].Name, j, got[i].Data[j], want[i].Data[j])
				}
			}
		}
		gotMetrics := metricsLines(t, c.Train.Out)
		if len(gotMetrics) != len(wantMetrics) {
			t.Fatalf("k=%d: %d metrics lines, want %d", k, len(gotMetrics), len(wantMetrics))
		}
		for i := range wantMetrics {
			g, w := gotMetrics[i], wantMetrics[i]
			if g.Epoch != w.Epoch || g.TrainLoss != w.TrainLoss || g.TrainAcc != w.TrainAcc || g.ValLoss != w.ValLoss || g.ValTop1 != w.ValTop1 {
				t.Errorf("k=%d epoch %d: metrics %+v, uninterrupted %+v", k, w.Epoch, g, w)
			}
		}
	}
}

func metricsLines(t *testing.T, run string) []EpochMetrics {
	t.Helper()
	var out []EpochMetrics
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(run, "metrics.jsonl"))), "\n") {
		var m EpochMetrics
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("metrics.jsonl: %v", err)
		}
		out = append(out, m)
	}
	return out
}

// nanAt reports a NaN loss from its step'th step on: as a result, or as
// the error a backend returns (the model refuses to apply such a step).
type nanAt struct {
	Backend
	step, calls int
	asError     bool
}

func (n *nanAt) Start(in model.Input, lr float32) (model.Pending, error) {
	n.calls++
	p, err := n.Backend.Start(in, lr)
	if err != nil || n.calls < n.step {
		return p, err
	}
	return nanStep{p, n.asError}, nil
}

type nanStep struct {
	model.Pending
	asError bool
}

func (s nanStep) Wait() (model.StepResult, model.StepTimes, error) {
	r, t, err := s.Pending.Wait()
	if s.asError {
		return model.StepResult{}, t, fmt.Errorf("wrapped: %w: NaN", model.ErrNonFiniteLoss)
	}
	r.Loss = math.NaN()
	return r, t, err
}

func TestNaNLossStopsAndKeepsTheLastGoodCheckpoint(t *testing.T) {
	for _, asError := range []bool{false, true} {
		testNaNLoss(t, asError)
	}
}

func testNaNLoss(t *testing.T, asError bool) {
	c := tinyConfig(t)
	opt := Options{Out: new(bytes.Buffer), wrapBackend: func(b Backend) Backend { return &nanAt{Backend: b, step: 6, asError: asError} }}
	_, err := Run(context.Background(), c, opt)
	if err == nil || !strings.Contains(err.Error(), "NaN") || !strings.Contains(err.Error(), "optim.lr") {
		t.Fatalf("asError=%v: error %v, want one reporting the NaN loss and what to do", asError, err)
	}
	dir, ok := latestCheckpoint(c.Train.Out)
	if !ok || filepath.Base(dir) != "epoch-0001" {
		t.Fatalf("latest checkpoint %q, want epoch-0001 (the last good one)", dir)
	}
	if _, err := loadCheckpointState(context.Background(), c.Train.Out); err != nil {
		t.Errorf("the last good checkpoint does not load: %v", err)
	}
}

// TestEvaluateMatchesTheRunsLastEpoch: evaluating the checkpoint a run wrote
// gives the validation numbers that run reported for its last epoch.
func TestEvaluateMatchesTheRunsLastEpoch(t *testing.T) {
	c := tinyConfig(t)
	sum, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Evaluate(context.Background(), c.Train.Out, "", "", new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	last := sum.Epochs[len(sum.Epochs)-1]
	if rep.Images != 12 || math.Abs(rep.Loss-last.ValLoss) > 1e-12 || rep.Top1 != last.ValTop1 || rep.Top5 != last.ValTop5 {
		t.Errorf("evaluate %+v; the run's last epoch: loss %v top1 %v top5 %v", rep, last.ValLoss, last.ValTop1, last.ValTop5)
	}
}

// asyncModel steps in a goroutine, as a GPU backend computes while the loop
// fetches the next batch: steps run one after another, each after the one
// before (a stream), and like a device copy it takes its own copy of the
// batch before Start returns.
type asyncModel struct {
	Backend
	prev     chan struct{} // closed when the last step started is done
	inFlight atomic.Int32  // started and not yet waited for
	maxSeen  atomic.Int32
}

func (a *asyncModel) Start(in model.Input, lr float32) (model.Pending, error) {
	in.X, in.U8, in.Labels = slices.Clone(in.X), slices.Clone(in.U8), slices.Clone(in.Labels)
	if k := a.inFlight.Add(1); k > a.maxSeen.Load() {
		a.maxSeen.Store(k)
	}
	s := &asyncStep{a: a, done: make(chan struct{})}
	prev := a.prev
	a.prev = s.done
	go func() {
		defer close(s.done)
		if prev != nil {
			<-prev
		}
		var p model.Pending
		if p, s.err = a.Backend.Start(in, lr); s.err == nil {
			s.res, s.times, s.err = p.Wait()
		}
	}()
	return s, nil
}

// asyncStep is a step of the asyncModel's, queued behind the one before.
type asyncStep struct {
	a     *asyncModel
	done  chan struct{}
	res   model.StepResult
	times model.StepTimes
	err   error
}

func (s *asyncStep) Queued() bool { return true }

func (s *asyncStep) Wait() (model.StepResult, model.StepTimes, error) {
	<-s.done
	s.a.inFlight.Add(-1)
	return s.res, s.times, s.err
}

// TestAsyncBackendGivesTheSameRun: the pipelined loop (a step in flight
// while the next batch is fetched) trains exactly as the synchronous one,
// and resumes exactly after an interrupt.
func TestAsyncBackendGivesTheSameRun(t *testing.T) {
	plain := tinyConfig(t)
	if _, err := Run(context.Background(), plain, Options{Out: new(bytes.Buffer)}); err != nil {
		t.Fatal(err)
	}
	want := lastWeights(t, plain.Train.Out)

	c := tinyConfig(t)
	var am *asyncModel
	wrap := func(b Backend) Backend { am = &asyncModel{Backend: b}; return am }
	interruptAfter(t, "pipelined", c, Options{wrapBackend: wrap}, 3)
	if m := am.maxSeen.Load(); m != 2 {
		t.Errorf("at most %d steps in flight; the loop should start step N+1 before waiting for step N, and no further", m)
	}
	c.Train.Resume = c.Train.Out
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer), wrapBackend: wrap}); err != nil {
		t.Fatal(err)
	}
	got := lastWeights(t, c.Train.Out)
	for i := range want {
		if !slices.Equal(got[i].Data, want[i].Data) {
			t.Fatalf("%s differs between the synchronous run and the pipelined, interrupted and resumed one", want[i].Name)
		}
	}
}

// TestInterruptBetweenEpochsNamesTheLastCheckpoint: an interrupt that lands
// after an epoch's checkpoint and before the next step still reports the
// checkpoint to resume from, and resuming finishes the run exactly.
func TestInterruptBetweenEpochsNamesTheLastCheckpoint(t *testing.T) {
	full := tinyConfig(t)
	if _, err := Run(context.Background(), full, Options{Out: new(bytes.Buffer)}); err != nil {
		t.Fatal(err)
	}
	c := tinyConfig(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Run(ctx, c, Options{Out: new(bytes.Buffer), AfterEpoch: func(EpochMetrics) bool { cancel(); return true }})
	var intr *InterruptedError
	if !errors.As(err, &intr) || filepath.Base(intr.Checkpoint) != "epoch-0001" {
		t.Fatalf("error %v, want an InterruptedError naming epoch-0001", err)
	}
	c.Train.Resume = c.Train.Out
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err != nil {
		t.Fatal(err)
	}
	want, got := lastWeights(t, full.Train.Out), lastWeights(t, c.Train.Out)
	for i := range want {
		if !slices.Equal(got[i].Data, want[i].Data) {
			t.Fatalf("%s differs after resuming from the epoch boundary", want[i].Name)
		}
	}
}
