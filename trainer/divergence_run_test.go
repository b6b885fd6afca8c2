package trainer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTooHighLRIsCalledOut: at optim.lr 5 the tiny run's loss explodes in
// its first epoch. Each train.on_divergence says so at the step it
// happens, with the advice; auto then stops after writing the last good
// state as a checkpoint that loads, stop stops at once writing nothing,
// and warn trains on to the end.
func TestTooHighLRIsCalledOut(t *testing.T) {
	for _, policy := range []string{divergenceAuto, divergenceStop, divergenceWarn} {
		t.Run(policy, func(t *testing.T) {
			c := tinyConfig(t)
			c.Optim.LR = 5
			c.Data.BatchSize = 2 // 15 steps an epoch
			c.Train.Epochs = 3
			c.Train.OnDivergence = policy
			var out bytes.Buffer
			sum, err := Run(context.Background(), c, Options{Out: &out})
			if policy == divergenceWarn {
				if err != nil {
					t.Fatalf("warn: the run stopped: %v", err)
				}
				if n := strings.Count(out.String(), "warning: training diverged at epoch 1 step "); n != 1 {
					t.Fatalf("warn: %d warnings in the output, want 1:\n%s", n, out.String())
				}
				if len(sum.Epochs) != c.Train.Epochs {
					t.Fatalf("warn: %d epochs trained, want all %d", len(sum.Epochs), c.Train.Epochs)
				}
				return
			}
			var de *DivergedError
			if !errors.As(err, &de) {
				t.Fatalf("error %v, want a DivergedError\n%s", err, out.String())
			}
			msg := err.Error()
			if de.Epoch != 1 || de.Step >= 15 || !strings.Contains(msg, fmt.Sprintf("diverged at epoch 1 step %d:", de.Step)) ||
				!strings.Contains(msg, "lower optim.lr") || !strings.Contains(msg, "optim.lr 5)") {
				t.Fatalf("diverged at epoch %d step %d, want in epoch 1 (of 15 steps), named with the advice: %s", de.Epoch, de.Step, msg)
			}
			if len(sum.Epochs) != 0 {
				t.Fatalf("%d epochs finished after the divergence, want the run stopped in the first", len(sum.Epochs))
			}
			ckpts, _ := filepath.Glob(filepath.Join(c.Train.Out, "checkpoints", "epoch-*"))
			if policy == divergenceStop {
				if de.Written || len(ckpts) != 0 || !strings.Contains(msg, "no checkpoint was written") {
					t.Fatalf("stop: checkpoints %v (written %v), want none: %s", ckpts, de.Written, msg)
				}
				return
			}
			if !de.Written || len(ckpts) != 1 || ckpts[0] != de.Checkpoint || !strings.Contains(msg, de.Checkpoint) {
				t.Fatalf("auto: checkpoints %v, want the one of the last good state, %q (written %v): %s", ckpts, de.Checkpoint, de.Written, msg)
			}
			st, err := loadCheckpointState(context.Background(), de.Checkpoint)
			if err != nil {
				t.Fatalf("auto: the last good state does not load: %v", err)
			}
			if st.Step > de.Step || st.Epoch != 0 || st.Partial.Batches != st.Step {
				t.Fatalf("auto: the checkpoint is of step %d (epoch %d, %d batches in), want one before step %d of epoch 1", st.Step, st.Epoch, st.Partial.Batches, de.Step)
			}
			if _, err := os.Stat(filepath.Join(c.Train.Out, "config.yaml")); err != nil {
				t.Fatalf("auto: the run folder lost its config beside the checkpoint: %v", err)
			}
		})
	}
}
