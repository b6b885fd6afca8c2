package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stoke/config"
	"stoke/figures"
)

// TestEstimateCountsTheEvaluation: the start-up estimate counts the
// evaluation's confusion matrix and its sum, which grow with the square of
// the classes (10000 classes: about 1.6 GB), and its figure, also for an
// ImageFolder, whose classes it counts from ROOT/train; the figure's part
// is bounded (it would have been 26 GB).
func TestEstimateCountsTheEvaluation(t *testing.T) {
	cfg := config.Default()
	base, _ := estimateRun(cfg)
	cfg.Data.Synthetic.Classes = 10000
	big, detail := estimateRun(cfg)
	t.Logf("10000 classes: %s", detail)
	if d := big - base; d < 16*1e8 || d > 2e9 {
		t.Errorf("10000 classes add %.3g bytes to the estimate, want the 1e8-cell matrix's ~1.6e9", d)
	}
	if !strings.Contains(detail, "evaluation") || !strings.Contains(detail, "10000x10000") {
		t.Errorf("detail %q does not name the evaluation's matrix", detail)
	}
	if figures.ConfusionMemory(10000) > 256<<20 {
		t.Errorf("the figure of 10000 classes is counted as %.3g bytes", figures.ConfusionMemory(10000))
	}

	root := t.TempDir()
	for i := range 300 {
		os.MkdirAll(filepath.Join(root, "train", fmt.Sprintf("c%03d", i)), 0o755)
	}
	cfg = config.Default()
	cfg.Data.Root = root
	if _, detail := estimateRun(cfg); !strings.Contains(detail, "300x300") {
		t.Errorf("ImageFolder of 300 classes: %q, want its 300x300 matrix counted", detail)
	}
}
