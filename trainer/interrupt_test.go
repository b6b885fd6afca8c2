package trainer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stoke/model"
)

// evalHook calls its function at the first evaluation step.
type evalHook struct {
	Backend
	at   func()
	done bool
}

func (e *evalHook) Eval(in model.Input) (model.EvalResult, error) {
	if !e.done {
		e.done = true
		e.at()
	}
	return e.Backend.Eval(in)
}

// TestFailedInterruptCheckpointIsReportedAsSuch: when the checkpoint an
// interrupt writes cannot be written (disk full, say), the run reports
// that failure, not a bare interrupt (the command printed "interrupted
// before the first step; nothing to keep" for it).
func TestFailedInterruptCheckpointIsReportedAsSuch(t *testing.T) {
	for _, during := range []string{"training", "evaluation"} {
		c := tinyConfig(t)
		ctx, cancel := context.WithCancel(context.Background())
		breakDisk := func() { // a file where the checkpoints folder goes: every save fails
			cancel()
			os.WriteFile(filepath.Join(c.Train.Out, "checkpoints"), []byte("in the way"), 0o644)
		}
		opt := Options{Out: new(bytes.Buffer)}
		if during == "training" {
			opt.afterStep = func(step int) {
				if step == 2 {
					breakDisk()
				}
			}
		} else {
			opt.wrapBackend = func(b Backend) Backend { return &evalHook{Backend: b, at: breakDisk} }
		}
		_, err := Run(ctx, c, opt)
		cancel()
		var intr *InterruptedError
		if err == nil || errors.As(err, &intr) || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "could not be written") {
			t.Errorf("interrupted during %s with the checkpoint failing: error %v; want the write failure, not an interrupt", during, err)
		}
	}
}

// TestInterruptBeforeSetUpDoesNoWork: a run whose context is cancelled
// before it starts (an interrupt during the scan, say) returns the
// context's error without making its run folder.
func TestInterruptBeforeSetUpDoesNoWork(t *testing.T) {
	c := tinyConfig(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, c, Options{Out: new(bytes.Buffer)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if _, err := os.Stat(c.Train.Out); err == nil {
		t.Errorf("the run folder %s was made", c.Train.Out)
	}
}
