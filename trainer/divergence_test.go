package trainer

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// learning is a training loss falling from ln k towards floor over the
// first half of n steps, with multiplicative noise of +-noise (a fixed
// pseudo-random sequence), as a healthy run's does.
func learning(k, n int, floor, noise float64) []float64 {
	lnK := math.Log(float64(k))
	out := make([]float64, n)
	x := uint32(12345)
	for i := range out {
		x = x*1664525 + 1013904223
		u := float64(x>>8)/float64(1<<24)*2 - 1
		out[i] = (floor + (lnK-floor)*math.Exp(-float64(i)/float64(n/8))) * (1 + noise*u)
	}
	return out
}

// then is a followed by n copies of v.
func then(a []float64, v float64, n int) []float64 {
	out := append([]float64(nil), a...)
	for range n {
		out = append(out, v)
	}
	return out
}

// replay gives losses to a fresh detector and returns what it reported,
// failing t if it reports twice.
func replay(t *testing.T, classes int, losses []float64) *DivergedError {
	t.Helper()
	d := newDivergence(classes)
	var first *DivergedError
	for i, l := range losses {
		if e := d.observe(i, l); e != nil {
			if first != nil {
				t.Fatalf("reported twice: at step %d and again at step %d", first.Step, e.Step)
			}
			first = e
		}
	}
	return first
}

// TestDivergenceDetector: a healthy loss, noisy or with one bad batch, is
// not a divergence; a loss that leaps far above its minimum or falls back
// to chance and stays there is, reported once, at the step it is seen.
func TestDivergenceDetector(t *testing.T) {
	ln10 := math.Log(10)
	// The first 17 steps of the quickstart at --optim.lr 5 (trace.json of a
	// real run): the loss leaps at step 10 and is NaN at step 17.
	lr5 := []float64{2.2984, 2.3053, 2.2918, 2.2777, 2.2658, 2.2181, 2.1468, 2.0018, 1.9390, 4.4171, 14.333, 410.94, 45.311, 2457271, 5.08e12, 7.13e32, 3.196}
	healthy := learning(10, 600, 0.02, 0.5)
	oneBad := append([]float64(nil), healthy...)
	oneBad[400] = 8 // one bad batch late in the run, 3.5 ln 10
	// A BatchNorm network at batch 8 on a 4-class set (resnet20 and
	// resnet18 in TestCheckpointLoadsInTorchvision): steps at 7-10x the
	// usual loss a few steps apart, then back; it trains on.
	wild := learning(4, 300, 0.6, 0.5)
	wild[200], wild[204], wild[230] = 9.68, 7.58, 6
	for _, tc := range []struct {
		name     string
		classes  int
		losses   []float64
		kind     string // "": silent
		from, to int    // the step it must be reported at, inclusive
	}{
		{name: "healthy, noisy", classes: 10, losses: healthy},
		{name: "healthy, 50 classes, label smoothing's floor", classes: 50, losses: learning(50, 600, 1.2, 0.3)},
		{name: "one bad batch", classes: 10, losses: oneBad},
		{name: "wild batches at batch 8", classes: 4, losses: wild},
		{name: "never learns: at chance throughout", classes: 10, losses: then(nil, ln10, 300)},
		{name: "a late rise, less than halfway back to chance", classes: 10, losses: then(healthy, 0.9, 200)},
		{name: "lr 5: the loss explodes", classes: 10, losses: lr5, kind: divergedSpike, from: 11, to: 13},
		{name: "the loss leaps far above its minimum", classes: 10, losses: then(healthy, 6, 100), kind: divergedSpike, from: 600, to: 610},
		{name: "back at chance after having been well below", classes: 50, losses: then(learning(50, 300, 1.8, 0.05), 0.92*math.Log(50), 200),
			kind: divergedChance, from: 300 + divergenceChanceSteps, to: 300 + 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := replay(t, tc.classes, tc.losses)
			if tc.kind == "" {
				if e != nil {
					t.Fatalf("reported a divergence on a healthy loss: %v", e.Diagnosis())
				}
				return
			}
			if e == nil {
				t.Fatalf("no divergence reported, want %s at step %d..%d", tc.kind, tc.from, tc.to)
			}
			if e.Kind != tc.kind || e.Step < tc.from || e.Step > tc.to {
				t.Fatalf("reported %s at step %d, want %s at step %d..%d: %s", e.Kind, e.Step, tc.kind, tc.from, tc.to, e.Diagnosis())
			}
		})
	}
}

// TestDivergenceMessage: the message names the epoch, the step, the
// learning rate and the setting to lower, and what happened to the run.
func TestDivergenceMessage(t *testing.T) {
	e := &DivergedError{Kind: divergedSpike, Epoch: 2, Step: 190, Loss: 6.1, Smoothed: 3.2, Min: 0.98, MinStep: 150, LnK: math.Log(10), LR: 0.0999, OptimLR: 0.1,
		Policy: divergenceAuto, Checkpoint: "runs/x/checkpoints/epoch-0001-batch-0019", Written: true}
	msg := e.Error()
	for _, want := range []string{"diverged at epoch 2 step 190", "learning rate there was 0.0999 (optim.lr 0.1)", "lower optim.lr", "--optim.lr 0.05",
		"train.on_divergence auto", "last good state", "epoch-0001-batch-0019"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	e.Written, e.Policy = false, divergenceStop
	if msg := e.Error(); !strings.Contains(msg, "the newest is runs/x/checkpoints/") || strings.Contains(msg, "last good state") {
		t.Errorf("stop's message: %s", msg)
	}
}

// TestDivergenceSilentOnTheShippedRecipes replays the training loss of
// every step of real runs of the README's commands with their shipped
// settings (testdata/losscurves, from each run's trace.json; the file's
// first line says which run): the detector must say nothing.
func TestDivergenceSilentOnTheShippedRecipes(t *testing.T) {
	files, err := filepath.Glob("testdata/losscurves/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded loss curves in testdata/losscurves (%v)", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			classes, losses := readLossCurve(t, path)
			if e := replay(t, classes, losses); e != nil {
				t.Fatalf("a divergence reported on %d steps of a healthy run: %s", len(losses), e.Diagnosis())
			}
		})
	}
}

// readLossCurve reads a recorded curve: comment lines (#), a line
// "classes K", then one loss per line.
func readLossCurve(t *testing.T, path string) (classes int, losses []float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if v, ok := strings.CutPrefix(line, "classes "); ok {
			if classes, err = strconv.Atoi(v); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			continue
		}
		l, err := strconv.ParseFloat(line, 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		losses = append(losses, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if classes < 2 || len(losses) == 0 {
		t.Fatalf("%s: want a classes line and losses, got classes %d and %d losses", path, classes, len(losses))
	}
	return classes, losses
}
