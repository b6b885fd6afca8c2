package cudaops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"stoke/augment"
)

// Tests of the kernels' CPU mirrors (ref_kernels_test.go) that every
// machine runs, and helpers the GPU tests share.

var imageNet = Normalize{Mean: [3]float32{0.485, 0.456, 0.406}, Std: [3]float32{0.229, 0.224, 0.225}}

func randBatch(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func close32(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > tol*(1+math.Abs(float64(want[i]))) || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s[%d] = %v, want %v (|diff| %.2g)", what, i, got[i], want[i], d)
		}
	}
}

func TestNormalizeU8(t *testing.T) {
	x := []uint8{0, 255, 128, 10, 20, 30}
	y := make([]float32, len(x))
	mean, std := [3]float32{0.485, 0.456, 0.406}, [3]float32{0.229, 0.224, 0.225}
	refNormalizeU8(x, y, 1, 2, mean, std)
	for i, v := range x {
		c := i / 2
		if want := (float32(v)/255 - mean[c]) / std[c]; y[i] != want {
			t.Errorf("y[%d] = %v, want %v", i, y[i], want)
		}
	}
}

// The normalize mirror (normalize_u8's index arithmetic: channel =
// (i/(S*S))%3 over B rows of CHW) against augment.NormalizeU8, which the
// trainer uses on the host: every byte value in every channel, several
// batch rows and image sizes, and a per-channel mean and std that differ
// enough to catch a wrong channel.
func TestNormalizeU8MatchesAugment(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	norm := Normalize{Mean: [3]float32{0.1, 0.5, 0.9}, Std: [3]float32{0.2, 0.7, 1.3}}
	for _, g := range []struct{ B, S int }{{1, 1}, {3, 2}, {2, 5}, {4, 16}} {
		x := make([]uint8, g.B*3*g.S*g.S)
		for i := range x {
			x[i] = uint8(rng.IntN(256))
		}
		if g.S == 16 { // every value in every channel of row 0
			for i := range 3 * 256 {
				x[i] = uint8(i % 256)
			}
		}
		got, want := make([]float32, len(x)), make([]float32, len(x))
		refNormalizeU8(x, got, g.B, g.S*g.S, norm.Mean, norm.Std)
		augment.NormalizeU8(want, x, g.S, norm.Mean, norm.Std)
		close32(t, fmt.Sprintf("B=%d S=%d", g.B, g.S), got, want, 1e-6)
	}
	// B below the buffer's rows (the padded batch): rows from B on untouched.
	x, y := []uint8{255, 255, 255, 255, 255, 255}, []float32{7, 7, 7, 7, 7, 7}
	refNormalizeU8(x, y, 1, 1, norm.Mean, norm.Std)
	for i, v := range y {
		if (i < 3) == (v == 7) {
			t.Fatalf("B=1 of 2 rows: y = %v", y)
		}
	}
}
