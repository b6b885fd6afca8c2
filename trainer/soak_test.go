package trainer

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"stoke/config"
	"stoke/data"
)

// soakCycles is how many interrupt + resume cycles TestSoakInterruptAndResume
// runs: 12, or $STOKE_SOAK_CYCLES (scripts/soak.sh sets 50).
func soakCycles(t *testing.T) int {
	n := 12
	if v := os.Getenv("STOKE_SOAK_CYCLES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("STOKE_SOAK_CYCLES=%q: want a count of cycles", v)
		}
	}
	return n
}

var errCrash = errors.New("soak: crashed here")

// TestSoakInterruptAndResume interrupts a resnet20 run again and again at
// random points, each time resuming it, and checks that its final weights
// are an uninterrupted run's, bit for bit. The points (drawn from a fixed
// seed): after 1-2 training steps; during the evaluation; during a
// checkpoint write, at each of its stages, as an interrupt (the write
// completes, the run stops after it) or as a crash (the write ends there);
// and during the resume's own checkpoint read.
func TestSoakInterruptAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak trains a resnet20 for tens of cycles")
	}
	n := soakCycles(t)
	root := filepath.Join(t.TempDir(), "ds")
	// 4 classes x 12 = 48 training images: 3 steps of 16 an epoch.
	if err := data.Generate(root, data.SynthOptions{Classes: 4, Train: 12, Val: 4, Size: 20, Seed: 3, Quality: 90}); err != nil {
		t.Fatal(err)
	}
	const stepsPerEpoch = 3
	base := func(out string) config.Config {
		c := config.Default()
		// 8 px: resnet20's stages at 8, 4 and 2 px; where an interrupt lands
		// and what a checkpoint holds do not depend on the size (the same 12
		// landings). At 16 px the soak took 58 s of CPU under -race, at 8 px
		// 39 s (388 s and 300 s of wall, side by side at load ~25).
		c.Data.Root, c.Data.ImageSize, c.Data.BatchSize, c.Data.Workers = root, 8, 16, 2
		c.Model.Arch = "resnet20"
		c.Optim.LR = 0.05
		c.Train.Epochs = n*3/(2*stepsPerEpoch) + 2 // about 1.5 steps a cycle, with room
		c.Train.Out, c.Train.Progress = out, "none"
		return c
	}
	ref := base(filepath.Join(t.TempDir(), "ref"))
	runOK(t, ref)
	want := lastWeights(t, ref.Train.Out)

	c := base(filepath.Join(t.TempDir(), "soak"))
	rng := rand.New(rand.NewPCG(20, uint64(n)))
	stages := []string{weightsFile, optimFile, stateFile, "rename", latestFile}
	landed := map[string]int{}
	started, finished := false, false
	defer func() { saveFault = nil }()
	for cycle := 0; cycle < n && !finished; cycle++ {
		ctx, cancel := context.WithCancel(context.Background())
		opt := Options{Out: io.Discard}
		cc := c
		if started {
			cc.Train.Resume = c.Train.Out
		}
		phases := []string{"step", "step", "eval", "write"}
		if started {
			phases = append(phases, "write-crash", "read")
		}
		phase := phases[rng.IntN(len(phases))]
		switch phase {
		case "step":
			k, steps := 1+rng.IntN(2), 0
			opt.afterStep = func(int) {
				if steps++; steps == k {
					cancel()
				}
			}
		case "eval":
			opt.wrapBackend = func(b Backend) Backend { return &evalHook{Backend: b, at: cancel} }
		case "write", "write-crash":
			stage := stages[rng.IntN(len(stages))]
			phase += " after " + stage
			crash := phase[:11] == "write-crash"
			saveFault = func(s string) error {
				if s != stage {
					return nil
				}
				saveFault = nil
				if crash {
					return errCrash
				}
				cancel()
				return nil
			}
		case "read":
			cancel() // the resume's checkpoint read is the first thing it does
		}
		_, err := Run(ctx, cc, opt)
		saveFault = nil
		cancel()
		var intr *InterruptedError
		switch {
		case err == nil:
			finished = true // the point drawn lay past the run's end
		case errors.As(err, &intr), errors.Is(err, errCrash):
		case phase == "read" && errors.Is(err, context.Canceled):
		default:
			t.Fatalf("cycle %d (%s): %v", cycle+1, phase, err)
		}
		if _, ok := latestCheckpoint(c.Train.Out); ok {
			started = true
		}
		landed[phase]++
	}
	if !finished {
		c.Train.Resume = c.Train.Out
		runOK(t, c)
	}
	got := lastWeights(t, c.Train.Out)
	t.Logf("%d cycles over %d epochs of %d steps: %v", n, c.Train.Epochs, stepsPerEpoch, landed)
	if len(got) != len(want) {
		t.Fatalf("%d tensors after the soak, %d uninterrupted", len(got), len(want))
	}
	for i := range want {
		for j := range want[i].Data {
			if got[i].Data[j] != want[i].Data[j] {
				t.Fatalf("%s[%d] = %v after the soak, %v uninterrupted", want[i].Name, j, got[i].Data[j], want[i].Data[j])
			}
		}
	}
}
