package trainer

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"stoke/figures"
)

// TestConfusionPNGOf1000ClassesIsBounded: a run's 1000-class matrix (no
// training: written as the run writes it) keeps every count in its CSV,
// and its figure is drawn from that CSV within figures.ConfusionSide's cap
// and within the memory the start-up estimate counts (it was an 8260 px
// figure of 818 MB).
func TestConfusionPNGOf1000ClassesIsBounded(t *testing.T) {
	const n = 1000
	classes := make([]string, n)
	counts := make(confusion, n)
	for i := range classes {
		classes[i] = fmt.Sprintf("n%08d", i)
		counts[i] = make([]int, n)
		counts[i][i], counts[i][(i+7)%n] = 40, 10
	}
	run := t.TempDir()
	if err := writeConfusion(run, 1, classes, counts); err != nil {
		t.Fatal(err)
	}
	csvPath := filepath.Join(run, "eval", "confusion-epoch-0001.csv")
	rows := 0
	if _, err := readConfusionCSV(csvPath, func(c []string) {
		if len(c) != n {
			t.Fatalf("CSV header has %d classes, want %d", len(c), n)
		}
	}, func(i int, row []int) error {
		if row[i] != 40 || row[(i+7)%n] != 10 {
			t.Fatalf("CSV row %d lost its counts", i)
		}
		rows++
		return nil
	}); err != nil || rows != n {
		t.Fatalf("CSV: %d rows, %v", rows, err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := writeConfusionPNG(run); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	st, _ := os.Stat(csvPath)
	alloc, bound := float64(after.TotalAlloc-before.TotalAlloc), figures.ConfusionMemory(n)+4*float64(st.Size())
	t.Logf("%d classes: CSV %d bytes; figure %d px, allocated %.1f MB (bound %.1f MB)", n, st.Size(), figures.ConfusionSide(n), alloc/1e6, bound/1e6)
	if alloc > bound {
		t.Errorf("drawing allocated %.0f bytes, more than %.0f", alloc, bound)
	}
	decodePNG(t, filepath.Join(run, "eval", confusionPNG), figures.ConfusionSide(n))
	if figures.ConfusionSide(n) > figures.ConfusionSide(figures.MaxCells) {
		t.Errorf("%d px, more than the cap", figures.ConfusionSide(n))
	}
}
