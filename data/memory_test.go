//go:build linux

package data

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"stoke/augment"
	"stoke/internal/rss"
)

// The memory tests run the loader in a child process (this test binary,
// re-run with childEnv set; see TestMain) and read its peak RSS, as
// cmd/train's TestMemoryStaysFlat does: the parent's own heap would blur
// the figure.
const childEnv = "STOKE_DATA_CHILD_LOADER"

func init() {
	childMain = func() bool {
		if os.Getenv(childEnv) == "" {
			return false
		}
		os.Exit(loaderChild())
		return true
	}
}

// zeroPNG16 is a w x h 16-bit RGBA PNG of zeros, written row by row so that
// the test never holds the pixels: 7000x7000 compresses to 381 KB and
// decodes into 392 MB.
func zeroPNG16(t *testing.T, w, h int) []byte {
	t.Helper()
	var out bytes.Buffer
	chunk := func(typ string, data []byte) {
		binary.Write(&out, binary.BigEndian, uint32(len(data)))
		c := append([]byte(typ), data...)
		out.Write(c)
		binary.Write(&out, binary.BigEndian, crc32.ChecksumIEEE(c))
	}
	out.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 16, 6 // 16-bit RGBA
	chunk("IHDR", ihdr)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	row := make([]byte, 1+8*w) // filter byte 0, then the pixels
	for range h {
		zw.Write(row)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	chunk("IDAT", z.Bytes())
	chunk("IEND", nil)
	return out.Bytes()
}

// childResult is what the child reports.
type childResult struct {
	PeakRSS  int64 `json:"peak_rss"`  // bytes, after the epoch
	StartRSS int64 `json:"start_rss"` // bytes, before the loader
	Images   int   `json:"images"`
	Skipped  int   `json:"skipped"`
	Err      string
}

// peakRSS is the process's peak resident set size (internal/rss: this
// process's own, not the test binary's that started it).
func peakRSS() int64 {
	_, peak := rss.Now()
	return peak
}

// loaderChild loads one epoch of the images in the folder $childEnv names
// with 4 workers and skipping bad images, within the decode budget in
// STOKE_DATA_CHILD_BUDGET, and prints a childResult.
func loaderChild() int {
	dir := os.Getenv(childEnv)
	budget, _ := strconv.ParseInt(os.Getenv("STOKE_DATA_CHILD_BUDGET"), 10, 64)
	res := childResult{StartRSS: peakRSS()}
	err := func() error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		idx := &Index{Root: dir, Classes: []string{"a"}}
		for _, e := range entries {
			idx.Samples = append(idx.Samples, Sample{Path: filepath.Join(dir, e.Name())})
		}
		tr, err := augment.NewTrain(augment.DefaultTrainParams(32))
		if err != nil {
			return err
		}
		l, err := NewLoader(LoaderConfig{Index: idx, Transform: tr, BatchSize: 4, Workers: 4, Prefetch: 2,
			SkipBadImages: true, MaxDecodeBytes: budget, Seed: 1})
		if err != nil {
			return err
		}
		defer l.Close()
		it := l.Epoch(context.Background(), 0)
		defer it.Close()
		for {
			b, err := it.Next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			res.Images += b.N
			res.Skipped += len(b.Skipped)
			b.Release()
		}
	}()
	if err != nil {
		res.Err = err.Error()
	}
	res.PeakRSS = peakRSS()
	json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// runLoaderChild writes files into a folder and loads them in a child.
func runLoaderChild(t *testing.T, budget int64, files map[string][]byte) childResult {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		writeFile(t, dir, name, b)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir, "STOKE_DATA_CHILD_BUDGET="+strconv.FormatInt(budget, 10))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var res childResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("child's report %q: %v", out, err)
	}
	if res.Err != "" {
		t.Fatalf("child: %s", res.Err)
	}
	return res
}

// goodJPEGs are n small JPEGs for the bad files to sit among.
func goodJPEGs(t *testing.T, files map[string][]byte, n int) {
	for i := range n {
		files[fmt.Sprintf("%02d-good.jpg", 2*i)] = gradientJPEG(t, 64, 64)
	}
}

// TestPNGBombsStayWithinTheMemoryBound: six 381 KB 16-bit RGBA PNGs of
// 7000x7000 (49 M pixels, under max_pixels; 588 MB each to decode: 392 MB
// of 16-bit pixels, 196 MB of RGB) among good images, 4 workers: each is
// refused from its header, so the loader's peak RSS stays under 160 MiB.
// Before the budget, this peaked at 3.95 GB.
func TestPNGBombsStayWithinTheMemoryBound(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory multiplies the heap; .ci/run runs this test without -race")
	}
	bomb := zeroPNG16(t, 7000, 7000)
	t.Logf("the bomb: %d bytes", len(bomb))
	files := map[string][]byte{}
	goodJPEGs(t, files, 10)
	for i := range 6 {
		files[fmt.Sprintf("%02d-bomb.png", 2*i+1)] = bomb
	}
	res := runLoaderChild(t, 0, files)
	t.Logf("peak RSS %d MiB (%d MiB at the start); %d images loaded, %d skipped", res.PeakRSS>>20, res.StartRSS>>20, res.Images, res.Skipped)
	if res.Skipped != 6 || res.Images != 10 {
		t.Errorf("%d images loaded and %d skipped, want 10 and the 6 bombs", res.Images, res.Skipped)
	}
	if res.PeakRSS > 160<<20 {
		t.Errorf("peak RSS %d MiB, want under 160 MiB", res.PeakRSS>>20)
	}
}

// TestLoaderMemoryBound: images that fit the decode budget are decoded,
// and the loader's peak RSS grows by no more than the bound docs/bad-input.md
// states for its live memory: workers x (budget + 32 MiB of kept buffers)
// + the batch pool. RSS also holds garbage the collector has not yet
// reclaimed; here that fits in what the budget's margin leaves (measured:
// 212 to 264 MiB of growth against 384 MiB).
func TestLoaderMemoryBound(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory multiplies the heap; .ci/run runs this test without -race")
	}
	const budget = 64 << 20
	big := zeroPNG16(t, 2000, 2000) // 48 MB to decode: within 64 MiB
	files := map[string][]byte{}
	goodJPEGs(t, files, 4)
	for i := range 8 {
		files[fmt.Sprintf("%02d-big.png", 2*i+1)] = big
	}
	res := runLoaderChild(t, budget, files)
	live := int64(4 * (budget + 32<<20)) // the batch pool (8 x 4 x 3 x 32 x 32 float32) is 0.4 MB
	t.Logf("peak RSS %d MiB (%d MiB at the start); bound on live memory %d MiB; %d images loaded, %d skipped",
		res.PeakRSS>>20, res.StartRSS>>20, live>>20, res.Images, res.Skipped)
	if res.Skipped != 0 || res.Images != 12 {
		t.Errorf("%d images loaded and %d skipped, want all 12 loaded", res.Images, res.Skipped)
	}
	if res.PeakRSS-res.StartRSS > live {
		t.Errorf("peak RSS grew by %d MiB, more than the %d MiB bound", (res.PeakRSS-res.StartRSS)>>20, live>>20)
	}
}
