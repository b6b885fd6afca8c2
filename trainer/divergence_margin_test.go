package trainer

import (
	"path/filepath"
	"testing"
)

// divergenceMargin replays losses through a fresh detector and returns how
// close each of its tests came to firing, as a fraction of what fires it
// (1 or more: it fired): spike, the highest excess of the median of the
// last divergenceWindow losses over the smoothed minimum, over the excess
// that is a divergence; chance, the longest run of steps at ln K after
// having been well below, over divergenceChanceSteps. at is the step of the
// highest spike fraction.
func divergenceMargin(classes int, losses []float64) (spike float64, at int, chance float64) {
	d := newDivergence(classes)
	longest := 0
	for i, l := range losses {
		d.observe(i, l)
		if d.steps >= divergenceWindow {
			if f := (d.recentMedian() - d.min) / max(2*d.min, 0.75*d.lnK); f > spike {
				spike, at = f, i
			}
		}
		longest = max(longest, d.atLnK)
	}
	return spike, at, float64(longest) / divergenceChanceSteps
}

// TestDivergenceMarginOnTheShippedRecipes prints, for each recorded curve
// of a healthy run (testdata/losscurves), how close the detector came to
// firing, and checks that the margin agrees with the detector: under 1 on
// every healthy curve, 1 or more on the quickstart at --optim.lr 5.
// go test -v -run TestDivergenceMargin ./trainer shows the margins.
func TestDivergenceMarginOnTheShippedRecipes(t *testing.T) {
	lr5 := []float64{2.2984, 2.3053, 2.2918, 2.2777, 2.2658, 2.2181, 2.1468, 2.0018, 1.9390, 4.4171, 14.333, 410.94, 45.311}
	if spike, _, _ := divergenceMargin(10, lr5); spike < 1 {
		t.Fatalf("the quickstart at --optim.lr 5 reaches %.2f of the spike threshold, want 1 or more (it fires there)", spike)
	}
	files, err := filepath.Glob("testdata/losscurves/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded loss curves in testdata/losscurves (%v)", err)
	}
	for _, path := range files {
		classes, losses := readLossCurve(t, path)
		spike, at, chance := divergenceMargin(classes, losses)
		t.Logf("%-40s %5d steps: spike %3.0f%% of the threshold (step %d), chance %3.0f%%", filepath.Base(path), len(losses), 100*spike, at, 100*chance)
		if spike >= 1 || chance >= 1 {
			t.Errorf("%s: a healthy run's curve at %.2f of the spike threshold and %.2f of the chance one: the detector fires on it", path, spike, chance)
		}
	}
}
