package trainer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"stoke/config"
	"stoke/dist"
	"stoke/model"
)

// runRanks runs cfg as n ranks of one data-parallel run (goroutines over
// dist.Local), each with cfg's batch size, and returns rank 0's output.
func runRanks(t *testing.T, n int, cfg config.Config, after func(EpochMetrics) bool) (string, []string) {
	t.Helper()
	comms := dist.Local(n)
	outs := make([]bytes.Buffer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer comms[r].Close()
			_, errs[r] = Run(context.Background(), cfg, Options{Out: &outs[r], Comm: comms[r], AfterEpoch: after})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("%d ranks: %v\n%s", n, err, outs[0].String())
	}
	var rest []string
	for r := 1; r < n; r++ {
		rest = append(rest, outs[r].String())
	}
	return outs[0].String(), rest
}

// maxRelDiff is max |a−b| / max(|b|) over every tensor: the distance of
// two sets of weights relative to their scale.
func maxRelDiff(t *testing.T, a, b []model.NamedTensor) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d vs %d tensors", len(a), len(b))
	}
	var d, scale float64
	for i := range a {
		for j := range a[i].Data {
			d = max(d, math.Abs(float64(a[i].Data[j]-b[i].Data[j])))
			scale = max(scale, math.Abs(float64(b[i].Data[j])))
		}
	}
	return d / scale
}

// distTolerance: the ranks' sum of n·g, divided by the total n, differs from
// one process's gradient by float32 rounding (a few ulps); over the tiny
// run's 8 momentum steps that stays below 1e-5 of the weights' scale.
const distTolerance = 1e-5

func closeTo(a, b, tol float64) bool { return math.Abs(a-b) <= tol*max(1, math.Abs(b)) }

// TestDataParallelMatchesOneProcess: N ranks × batch B end with the weights
// and epoch figures of 1 rank × batch N·B. 30 images: with 2 × 4 the last
// global batch (6) is split 4 + 2; with 3 × 4 it is 4 + 2 + 0, so rank 2
// steps with an empty slice. Tiny buckets make several allreduces a step.
func TestDataParallelMatchesOneProcess(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d ranks", n), func(t *testing.T) {
			one := tinyConfig(t)
			one.Data.BatchSize = 4 * n
			if _, err := Run(context.Background(), one, Options{Out: new(bytes.Buffer)}); err != nil {
				t.Fatal(err)
			}
			par := tinyConfig(t)
			par.Data.BatchSize = 4
			par.Train.DistBucketMB = 0.001 // ~1 KB: one bucket per conv weight, the rest together
			out0, rest := runRanks(t, n, par, nil)
			if !strings.Contains(out0, fmt.Sprintf("data parallel: %d ranks", n)) || !strings.Contains(out0, "allreduce:") {
				t.Errorf("rank 0's output lacks the data-parallel lines:\n%s", out0)
			}
			for r, o := range rest {
				if o != "" {
					t.Errorf("rank %d printed:\n%s", r+1, o)
				}
			}
			epochs := sameAsOneRank(t, n, par, one)
			for e := range epochs {
				// The confusion matrix is the sum of the ranks' shards.
				name := filepath.Join("eval", fmt.Sprintf("confusion-epoch-%04d.csv", e+1))
				if cp, c1 := readFile(t, filepath.Join(par.Train.Out, name)), readFile(t, filepath.Join(one.Train.Out, name)); cp != c1 {
					t.Errorf("epoch %d: %d ranks' %s\n%s\none rank's\n%s", e+1, n, name, cp, c1)
				}
			}
		})
	}
}

// sameAsOneRank checks that the data-parallel run par (n ranks) ended with
// the weights (within distTolerance) and the epoch figures of the
// one-rank run one, and returns the number of epochs.
func sameAsOneRank(t *testing.T, n int, par, one config.Config) int {
	t.Helper()
	if d := maxRelDiff(t, lastWeights(t, par.Train.Out), lastWeights(t, one.Train.Out)); d > distTolerance {
		t.Errorf("weights differ by %.3g of their scale, want <= %g", d, distTolerance)
	} else {
		t.Logf("weights within %.3g of their scale", d)
	}
	a, b := metricsLines(t, par.Train.Out), metricsLines(t, one.Train.Out)
	if len(a) != len(b) {
		t.Fatalf("%d vs %d epochs of metrics", len(a), len(b))
	}
	for e := range a {
		x, y := a[e], b[e]
		if x.TrainAcc != y.TrainAcc || x.ValTop1 != y.ValTop1 || x.ValTop5 != y.ValTop5 ||
			!closeTo(x.TrainLoss, y.TrainLoss, 1e-5) || !closeTo(x.ValLoss, y.ValLoss, 1e-5) || x.LR != y.LR {
			t.Errorf("epoch %d: %d ranks %+v\none rank %+v", e+1, n, x, y)
		}
	}
	return len(a)
}

// TestTwoRankCheckpointResumesOnOneRank: a checkpoint of 2 × 4 continues
// on 1 × 8 (the same global batch) and ends where 2 × 4 would have; 1 × 4
// (another global batch) is refused, naming the batch size.
func TestTwoRankCheckpointResumesOnOneRank(t *testing.T) {
	full := tinyConfig(t)
	full.Data.BatchSize = 4
	runRanks(t, 2, full, nil)

	part := tinyConfig(t)
	part.Data.BatchSize = 4
	runRanks(t, 2, part, func(m EpochMetrics) bool { return m.Epoch < 1 })
	st, err := loadCheckpointState(context.Background(), part.Train.Out)
	if err != nil || st.Epoch != 1 || st.Config.Data.BatchSize != 8 {
		t.Fatalf("2-rank checkpoint: %+v, %v; want epoch 1 recorded with the global batch 8", st, err)
	}

	bad := part
	bad.Train.Resume = part.Train.Out
	if _, err := Run(context.Background(), bad, Options{Out: new(bytes.Buffer)}); err == nil || !strings.Contains(err.Error(), "data.batch_size") {
		t.Fatalf("resume on 1 rank x 4 (global batch 4, was 8): err = %v, want a refusal naming data.batch_size", err)
	}
	cont := part
	cont.Data.BatchSize = 8
	cont.Train.Resume = part.Train.Out
	var out bytes.Buffer
	if _, err := Run(context.Background(), cont, Options{Out: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "resumed from") {
		t.Fatalf("no resume:\n%s", out.String())
	}
	if d := maxRelDiff(t, lastWeights(t, cont.Train.Out), lastWeights(t, full.Train.Out)); d > distTolerance {
		t.Errorf("resumed on 1 rank, weights differ from 2 ranks throughout by %.3g of their scale", d)
	}
	if m := metricsLines(t, cont.Train.Out); len(m) != 2 || m[1].Epoch != 2 {
		t.Errorf("metrics after the resume: %+v", m)
	}
}

// TestOnlyRankZeroWrites: the other ranks leave nothing in the run folder
// (here each rank has its own, as on nodes without a shared disk).
func TestOnlyRankZeroWrites(t *testing.T) {
	base := tinyConfig(t)
	base.Train.Epochs = 1
	comms := dist.Local(2)
	dirs := []string{filepath.Join(t.TempDir(), "r0"), filepath.Join(t.TempDir(), "r1")}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer comms[r].Close()
			c := base
			c.Train.Out = dirs[r]
			_, errs[r] = Run(context.Background(), c, Options{Out: new(bytes.Buffer), Comm: comms[r]})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if _, ok := latestCheckpoint(dirs[0]); !ok {
		t.Error("rank 0 wrote no checkpoint")
	}
	if _, err := os.Stat(dirs[1]); !os.IsNotExist(err) {
		t.Errorf("rank 1 wrote %s (stat: %v)", dirs[1], err)
	}
}

// TestInterruptedOneRankResumesOnTwo: a 1 × 8 run interrupted mid-epoch
// resumes on 2 × 4 and ends as the uninterrupted 1 × 8 run: the partial
// epoch's figures are counted once (rank 0 carries them), not per rank.
func TestInterruptedOneRankResumesOnTwo(t *testing.T) {
	full := tinyConfig(t)
	if _, err := Run(context.Background(), full, Options{Out: new(bytes.Buffer)}); err != nil {
		t.Fatal(err)
	}
	c := tinyConfig(t)
	interruptAfter(t, "1 x 8", c, Options{}, 2)
	c.Train.Resume = c.Train.Out
	c.Data.BatchSize = 4
	runRanks(t, 2, c, nil)
	if d := maxRelDiff(t, lastWeights(t, c.Train.Out), lastWeights(t, full.Train.Out)); d > distTolerance {
		t.Errorf("weights differ by %.3g", d)
	}
	a, b := metricsLines(t, c.Train.Out), metricsLines(t, full.Train.Out)
	for e := range b {
		if e >= len(a) || a[e].TrainAcc != b[e].TrainAcc || !closeTo(a[e].TrainLoss, b[e].TrainLoss, 1e-5) {
			t.Fatalf("epoch %d: resumed on 2 ranks %+v\nuninterrupted %+v", e+1, a, b)
		}
	}
}

// TestDataParallelResNet: resnet20 trains on 2 and 3 ranks (3 × 4 puts a
// rank with no samples in the last step of each epoch). Its BatchNorm
// statistics are each rank's own, as in PyTorch's DDP, so N × B does not
// compute what 1 × N·B does and the weights are not compared with one
// process here; what must hold is that the gradients, not the BatchNorm buffers beside
// them in the state, are what the ranks sum: sized from the state, the
// sample count slot was overwritten and every step failed. One epoch holds
// every kind of step the test needs (the empty slice is its last); two took
// 149 s under -race at load 15-30.
func TestDataParallelResNet(t *testing.T) {
	for _, n := range []int{2, 3} {
		c := resnetTiny(t)
		c.Data.BatchSize, c.Train.Epochs = 4, 1
		out0, _ := runRanks(t, n, c, nil)
		if !strings.Contains(out0, fmt.Sprintf("data parallel: %d ranks", n)) {
			t.Errorf("%d ranks: rank 0's output lacks the data-parallel line:\n%s", n, out0)
		}
		for _, m := range metricsLines(t, c.Train.Out) {
			if math.IsNaN(m.TrainLoss) || math.IsNaN(m.ValLoss) {
				t.Errorf("%d ranks: %+v", n, m)
			}
		}
	}
}
