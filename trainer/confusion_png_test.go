package trainer

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stoke/figures"
)

// decodePNG fails the test unless path is a PNG of side x side pixels that
// is not one flat colour, and returns it.
func decodePNG(t *testing.T, path string, side int) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != side || b.Dy() != side {
		t.Fatalf("%s is %dx%d, want %dx%d", path, b.Dx(), b.Dy(), side, side)
	}
	colours := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(colours) < 3 {
		t.Fatalf("%s has %d colours: nothing drawn", path, len(colours))
	}
	return img
}

// darkness is 0 for white, up to 3·65535 for black.
func darkness(img image.Image, x, y int) uint32 {
	r, g, b, _ := img.At(x, y).RGBA()
	return 3*0xffff - r - g - b
}

// TestConfusionPNGSizes: the figure is a valid PNG of figures.ConfusionSide(n)
// for 2 to 105 classes (names skipped past 50, counts written up to 20),
// also with odd class names and empty rows; the cell of a true class
// predicted right is darker than one never predicted.
func TestConfusionPNGSizes(t *testing.T) {
	for _, n := range []int{2, 10, 21, 64, 105} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			classes := make([]string, n)
			counts := make([][]int, n)
			for i := range classes {
				classes[i] = fmt.Sprintf("%03d_class_with_a_rather_long_name", i)
				counts[i] = make([]int, n)
				if i != 1 { // class 1 has no samples: a row of zeros, not NaN
					counts[i][i] = 9
					counts[i][(i+1)%n] = 1
				}
			}
			classes[0] = "bad\xff\x01name"
			dir := t.TempDir()
			run := filepath.Join(dir, "run")
			os.MkdirAll(filepath.Join(run, "eval"), 0o755)
			if err := writeConfusion(run, 3, classes, counts); err != nil {
				t.Fatal(err)
			}
			if err := writeConfusionPNG(run); err != nil {
				t.Fatal(err)
			}
			side := figures.ConfusionSide(n)
			img := decodePNG(t, filepath.Join(run, "eval", confusionPNG), side)
			// A diagonal cell is 90% of its row: far darker than white.
			darkest := uint32(0)
			for y := 0; y < side; y += 2 {
				for x := 0; x < side; x += 2 {
					darkest = max(darkest, darkness(img, x, y))
				}
			}
			if darkest < 2*0xffff {
				t.Errorf("no dark cell in the figure (darkest %d)", darkest)
			}
		})
	}
	if figures.ConfusionSide(100) > 1200 || figures.ConfusionSide(2) < 300 {
		t.Errorf("sides %d (100 classes), %d (2): want a readable figure that stays under 1200 px", figures.ConfusionSide(100), figures.ConfusionSide(2))
	}
}

// TestConfusionPNGPicksTheLastEpoch: of several CSVs, the figure is of the
// highest epoch (by number, not by name order), and a malformed CSV is an
// error naming it.
func TestConfusionPNGPicksTheLastEpoch(t *testing.T) {
	run := t.TempDir()
	classes := []string{"a", "b", "c"}
	for _, e := range []int{2, 10, 9} {
		if err := writeConfusion(run, e, classes, [][]int{{e, 0, 0}, {0, 1, 0}, {0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
	}
	epoch, path, ok, err := newestConfusionCSV(run)
	if err != nil || !ok || epoch != 10 || filepath.Base(path) != "confusion-epoch-0010.csv" {
		t.Fatalf("newest CSV: epoch %d %s %v %v, want 10", epoch, path, ok, err)
	}
	var counts [][]int
	_, err = readConfusionCSV(path, func([]string) {}, func(_ int, row []int) error {
		counts = append(counts, append([]int(nil), row...))
		return nil
	})
	if err != nil || counts[0][0] != 10 || counts[2][2] != 1 {
		t.Fatalf("read back %v, %v", counts, err)
	}
	os.WriteFile(filepath.Join(run, "eval", "confusion-epoch-0011.csv"), []byte("x,y\n1\n"), 0o644)
	if err := writeConfusionPNG(run); err == nil || !strings.Contains(err.Error(), "confusion-epoch-0011.csv") {
		t.Fatalf("malformed CSV: error %v, want one naming it", err)
	}
	if err := writeConfusionPNG(t.TempDir()); err != nil {
		t.Fatalf("a run with no CSV: %v, want no figure and no error", err)
	}
}

// TestRunWritesConfusionPNG: a run ends with eval/confusion.png of its last
// evaluation; when that path cannot be written the run says so, naming the
// file, and its last checkpoint is there and loads.
func TestRunWritesConfusionPNG(t *testing.T) {
	c := tinyConfig(t)
	runOK(t, c)
	classes := classNames(t, c.Data.Root)
	decodePNG(t, filepath.Join(c.Train.Out, "eval", confusionPNG), figures.ConfusionSide(len(classes)))

	bad := tinyConfig(t)
	// After the last epoch's checkpoint, a folder takes the figure's place.
	block := func(m EpochMetrics) bool {
		if m.Epoch == bad.Train.Epochs {
			os.MkdirAll(filepath.Join(bad.Train.Out, "eval", confusionPNG, "x"), 0o755)
		}
		return true
	}
	sum, err := Run(context.Background(), bad, Options{Out: new(bytes.Buffer), AfterEpoch: block})
	t.Logf("what the user sees: %v", err)
	if err == nil || !strings.Contains(err.Error(), filepath.Join("eval", confusionPNG)) || !strings.Contains(err.Error(), "checkpoints are unaffected") {
		t.Fatalf("error %v, want one naming eval/confusion.png and saying the checkpoints are kept", err)
	}
	if sum == nil || len(sum.Epochs) != bad.Train.Epochs {
		t.Fatalf("summary %+v: the run's epochs are lost", sum)
	}
	dir, ok := latestCheckpoint(bad.Train.Out)
	if !ok || filepath.Base(dir) != fmt.Sprintf("epoch-%04d", bad.Train.Epochs) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("latest checkpoint %q (error %v), want the last epoch's, named in the error", dir, err)
	}
	want := lastWeights(t, c.Train.Out)
	got := lastWeights(t, bad.Train.Out)
	for i := range want {
		if !bytes.Equal(f32bytes(got[i].Data), f32bytes(want[i].Data)) {
			t.Fatalf("%s differs from the run that wrote its figure", want[i].Name)
		}
	}
}

func f32bytes(v []float32) []byte {
	b, _ := binary.Append(nil, binary.LittleEndian, v)
	return b
}
