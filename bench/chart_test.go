package bench

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// blogResults are the README's table (seconds per epoch over 5 epochs).
func blogResults() []Result {
	r := func(impl, name string, secs, wait float64) Result {
		return Result{Impl: impl, Variant: Variant{Name: name}, SecPerEpoch: secs, WaitShare: wait, ComputeShare: 0.9 - wait}
	}
	return []Result{
		r("stoke", "baseline", 0.70, 0.54), r("stoke", "num_workers", 0.56, 0.06), r("stoke", "pin_memory", 0.70, 0.53),
		r("stoke", "non_blocking", 0.70, 0.53), r("stoke", "all three", 0.54, 0.07),
		r("pytorch", "baseline", 14, 0.87), r("pytorch", "all three", 12, 0.21),
	}
}

// TestChartPanelsHaveTheirOwnScales: stoke's bars are drawn on stoke's
// scale, PyTorch's on PyTorch's, so that PyTorch's 12-14 s no longer
// squash stoke's 0.5-0.7 s split into a sliver.
func TestChartPanelsHaveTheirOwnScales(t *testing.T) {
	ps := chartPanels(blogResults())
	if len(ps) != 2 || ps[0].impl != "stoke" || len(ps[0].results) != 5 || ps[1].impl != "pytorch" || len(ps[1].results) != 2 {
		t.Fatalf("panels %+v", ps)
	}
	if ps[0].tallest != 0.70 || ps[1].tallest != 14 {
		t.Errorf("scales: stoke %v, PyTorch %v; want 0.7 and 14", ps[0].tallest, ps[1].tallest)
	}
}

// TestChartWritesBothPanels: chart.png holds both panels side by side
// (its width is the two panels' widths) and chart.svg is written too.
func TestChartWritesBothPanels(t *testing.T) {
	dir := t.TempDir()
	rep := &Report{Device: "cpu", Rounds: 2, Results: blogResults()}
	if err := rep.chart(dir); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "chart.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	wantW := (2*chartAxisW + 7*chartSlotW) * 96 / 72 // points at 96 dpi
	if cfg.Width < wantW-2 || cfg.Width > wantW+2 || cfg.Height < chartH*96/72-2 {
		t.Errorf("chart.png is %dx%d; want %d wide (two panels, 5 + 2 bars)", cfg.Width, cfg.Height, wantW)
	}
	if st, err := os.Stat(filepath.Join(dir, "chart.svg")); err != nil || st.Size() == 0 {
		t.Errorf("chart.svg: %v", err)
	}
}
