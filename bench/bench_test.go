package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadMetricsWeighsEpochsByTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	os.WriteFile(path, []byte(`{"epoch":1,"train_loss":2,"img_per_s":100,"wait_share":0.5,"copy_share":0,"compute_share":0.5,"train_seconds":10,"peak_rss_bytes":5}
{"epoch":2,"train_loss":1,"img_per_s":300,"wait_share":0.1,"copy_share":0.1,"compute_share":0.8,"train_seconds":30,"peak_rss_bytes":7}
`), 0o644)
	r, err := readMetrics(path)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// 1000 + 9000 images in 40 s; wait (5 + 3) s; compute (5 + 24) s.
	if !near(r.TrainSeconds, 40) || !near(r.SecPerEpoch, 20) || !near(r.ImgPerSec, 250) ||
		!near(r.WaitShare, 0.2) || !near(r.CopyShare, 0.075) || !near(r.ComputeShare, 29.0/40) ||
		r.FinalLoss != 1 || r.PeakRSSBytes != 7 {
		t.Errorf("summed metrics %+v", r)
	}
	os.WriteFile(path, nil, 0o644)
	if _, err := readMetrics(path); err == nil || !strings.Contains(err.Error(), "no epochs") {
		t.Errorf("empty metrics: %v", err)
	}
}

func TestMedian(t *testing.T) {
	m := median([]Result{{TrainSeconds: 9}, {TrainSeconds: 1}, {TrainSeconds: 5}})
	if m.TrainSeconds != 5 || m.Rounds != 3 {
		t.Errorf("median of 9, 1, 5 = %v over %d rounds", m.TrainSeconds, m.Rounds)
	}
	// Two rounds of 100 images, in 50 s and 25 s: the median time is 37.5 s,
	// so 2.67 img/s, not the mean of the rates (3).
	if m := median([]Result{{TrainSeconds: 50, ImgPerSec: 2}, {TrainSeconds: 25, ImgPerSec: 4}}); m.TrainSeconds != 37.5 || math.Abs(m.ImgPerSec-100/37.5) > 1e-12 {
		t.Errorf("median of 100 images in 50 s and in 25 s: %v s, %v img/s; want 37.5 s, %v img/s", m.TrainSeconds, m.ImgPerSec, 100/37.5)
	}
}

func TestVariantsAreThePostsAblation(t *testing.T) {
	v := Variants(8)
	if len(v) != 5 || v[0].Workers != 0 || v[0].PinMemory || v[0].NonBlocking {
		t.Fatalf("variants %+v: the first must be the baseline", v)
	}
	last := v[4]
	if last.Workers != 8 || !last.PinMemory || !last.NonBlocking {
		t.Errorf("the last variant %+v must switch on all three", last)
	}
	for _, single := range v[1:4] {
		on := 0
		for _, b := range []bool{single.Workers > 0, single.PinMemory, single.NonBlocking} {
			if b {
				on++
			}
		}
		if on != 1 {
			t.Errorf("%s switches on %d switches, want exactly one", single.Name, on)
		}
	}
}

// TestMedianAgreesWithSpeedup: a variant with more img/s than the baseline
// has a speedup above 1 (the ratio of median times), whatever the spread
// of its rounds; with each field's median taken alone it could fall below.
func TestMedianAgreesWithSpeedup(t *testing.T) {
	run := func(secs float64) Result { // 1000 images over 2 epochs
		return Result{TrainSeconds: secs, ImgPerSec: 1000 / secs, SecPerEpoch: secs / 2, WaitShare: 0.5}
	}
	base := median([]Result{run(10), run(10)})
	v := median([]Result{run(2), run(18.5)}) // mean of rates 277 img/s, far above the baseline's 100
	speedup := base.TrainSeconds / v.TrainSeconds
	if (v.ImgPerSec > base.ImgPerSec) != (speedup > 1) {
		t.Errorf("img/s %.1f vs baseline %.1f, yet speedup %.3f", v.ImgPerSec, base.ImgPerSec, speedup)
	}
	if got, want := v.ImgPerSec*v.TrainSeconds, 1000.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("img/s x train time = %v images, want %v", got, want)
	}
	if v.SecPerEpoch != v.TrainSeconds/2 || v.WaitShare != 0.5 {
		t.Errorf("s/epoch %v (train %v over 2 epochs), wait %v", v.SecPerEpoch, v.TrainSeconds, v.WaitShare)
	}
	if m := median([]Result{run(9), run(1), run(5)}); m.TrainSeconds != 5 || m.ImgPerSec != 200 {
		t.Errorf("odd count: %v s, %v img/s; want the 5 s run's", m.TrainSeconds, m.ImgPerSec)
	}
}
