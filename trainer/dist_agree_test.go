package trainer

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"stoke/config"
	"stoke/dist"
)

// runEach runs rank r of a 2-rank run (goroutines over dist.Local) with
// cfgs[r], and returns each rank's error.
func runEach(cfgs [2]config.Config) [2]error {
	comms := dist.Local(2)
	var errs [2]error
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer comms[r].Close()
			_, errs[r] = Run(context.Background(), cfgs[r], Options{Out: new(bytes.Buffer), Comm: comms[r]})
		}()
	}
	wg.Wait()
	return errs
}

// TestRanksThatDisagreeStopBeforeTheFirstStep: ranks with another
// setting stop, every one with the same message naming the setting, both
// values and the rank (without MPI: the TestMPI* runs in cmd/train do the
// same under mpirun); ranks that differ only in per-rank settings train.
func TestRanksThatDisagreeStopBeforeTheFirstStep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*config.Config)
		want   string // "" = trains
	}{
		{"arch", func(c *config.Config) { c.Model.Arch = "resnet20" }, "model.arch is cnn on rank 0 but resnet20 on rank 1"},
		{"optimizer", func(c *config.Config) { c.Optim.Optimizer = "adamw" }, "optim.optimizer is sgd on rank 0 but adamw on rank 1"},
		{"lr", func(c *config.Config) { c.Optim.LR = 0.5 }, "optim.lr is 0.05 on rank 0 but 0.5 on rank 1"},
		{"bucket size", func(c *config.Config) { c.Train.DistBucketMB = 0.001 }, "train.dist_bucket_mb is 25 on rank 0 but 0.001 on rank 1"},
		{"per-rank settings", func(c *config.Config) { c.Data.Workers, c.Train.Progress, c.Train.KeepCkpts = 0, "none", 5 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tinyConfig(t)
			a.Train.Epochs = 1
			b := a
			b.Train.Out = a.Train.Out + "-1"
			tc.change(&b)
			errs := runEach([2]config.Config{a, b})
			for r, err := range errs {
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("rank %d: %v", r, err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "the ranks of this run disagree")):
					t.Errorf("rank %d: %v, want %q", r, err, tc.want)
				}
			}
			if tc.want != "" && errs[0] != nil && errs[1] != nil && errs[0].Error() != errs[1].Error() {
				t.Errorf("the ranks say different things:\n%v\n%v", errs[0], errs[1])
			}
		})
	}
}
