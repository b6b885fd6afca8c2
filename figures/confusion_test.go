package figures

import (
	"bytes"
	"fmt"
	"image/png"
	"runtime"
	"testing"
)

// synthetic fills a Confusion of n classes row by row, as the trainer does
// from its CSV: 90% of each class right, the rest one class on.
func synthetic(t *testing.T, n int) *Confusion {
	t.Helper()
	classes := make([]string, n)
	for i := range classes {
		classes[i] = fmt.Sprintf("n%08d", i)
	}
	c := NewConfusion(classes)
	row := make([]int, n)
	for i := range n {
		clear(row)
		row[i], row[(i+1)%n] = 9, 1
		if err := c.AddRow(i, row); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestConfusionMemoryIsBounded: 1000 and 10000 classes draw a figure no
// larger than the 200-cell one (1000 classes used to draw 8260x8260 px,
// 818 MB; 10000 would have needed 26 GB), allocating within
// ConfusionMemory, which the start-up memory estimate counts.
func TestConfusionMemoryIsBounded(t *testing.T) {
	limit := ConfusionSide(MaxCells)
	if limit > 2000 {
		t.Fatalf("the largest figure is %d px a side", limit)
	}
	for _, n := range []int{1000, 10000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			c := synthetic(t, n)
			b, err := c.PNG("epoch 1")
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			alloc := float64(after.TotalAlloc - before.TotalAlloc)
			t.Logf("%d classes: %d px, %d-byte PNG, allocated %.1f MB (bound %.1f MB)", n, ConfusionSide(n), len(b), alloc/1e6, ConfusionMemory(n)/1e6)
			if alloc > ConfusionMemory(n) {
				t.Errorf("allocated %.0f bytes, more than ConfusionMemory's %.0f", alloc, ConfusionMemory(n))
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if s := img.Bounds().Dx(); s != ConfusionSide(n) || s > limit || img.Bounds().Dy() != s {
				t.Errorf("figure %v, want a square of %d px at most %d", img.Bounds(), ConfusionSide(n), limit)
			}
			if c.group < 2 || c.cells > MaxCells {
				t.Errorf("%d classes: %d to a cell, %d cells", n, c.group, c.cells)
			}
			if d := c.share[0][0] / float64(c.rowsIn[0]); d < 0.9 {
				t.Errorf("first diagonal cell %.2f, want at least 0.9", d)
			}
		})
	}
}

// TestConfusionUpToMaxCellsIsOneCellPerClass: up to MaxCells classes each
// class is its own cell and the side grows with the classes, as before.
func TestConfusionUpToMaxCellsIsOneCellPerClass(t *testing.T) {
	for _, tc := range []struct{ n, side, group int }{{2, 340, 1}, {100, 1060, 1}, {200, 1860, 1}, {201, 1068, 2}, {1000, 1860, 5}, {10000, 1860, 50}} {
		if s := ConfusionSide(tc.n); s != tc.side {
			t.Errorf("%d classes: %d px, want %d", tc.n, s, tc.side)
		}
		if g := NewConfusion(make([]string, tc.n)).group; g != tc.group {
			t.Errorf("%d classes: %d to a cell, want %d", tc.n, g, tc.group)
		}
	}
}
