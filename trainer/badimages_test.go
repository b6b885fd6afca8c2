package trainer

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"stoke/config"
	"stoke/data"
	"stoke/model"
)

// gradientJPEG is a 64 px JPEG of smooth gradients, whose tables and scan
// are long enough to cut in either.
func gradientJPEG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for y := range 64 {
		for x := range 64 {
			i := img.PixOffset(x, y)
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = uint8(4*x), uint8(4*y), uint8(x^y), 255
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// datasetWithBadJPEGs is the tiny dataset with truncated and corrupt JPEGs
// spread over its classes, sorted among the good images. A cut in the
// headers is what broke libjpeg-turbo handles; cuts and damage in the scan
// are here too.
func datasetWithBadJPEGs(t *testing.T) string {
	t.Helper()
	root := copyTinyDataset(t)
	good := gradientJPEG(t)
	sos := bytes.Index(good, []byte{0xff, 0xda})
	if sos < 0 {
		t.Fatal("no SOS marker")
	}
	overwritten := func(at int) []byte {
		b := bytes.Clone(good)
		for i := at; i < at+24; i++ {
			b[i] = byte(0x5a + 37*i)
		}
		return b
	}
	classes := classNames(t, root)
	for i, f := range []struct {
		name string
		b    []byte
	}{
		{"00003-truncated.jpg", good[:200]},     // in the tables
		{"00005-truncated.jpg", good[:sos+6]},   // in the scan header
		{"00002-corrupt.jpg", overwritten(100)}, // the tables
		{"00007-corrupt.jpg", overwritten((sos + len(good)) / 2)},
		{"00004-truncated.jpg", good[:sos+(len(good)-sos)*3/4]}, // in the scan
		{"00006-truncated.jpg", good[:sos-30]},
	} {
		write(t, filepath.Join(root, "train", classes[i%len(classes)]), f.name, f.b)
	}
	return root
}

func classNames(t *testing.T, root string) []string {
	t.Helper()
	train, _, err := data.Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	return train.Classes
}

// TestBadJPEGsChangeNothingElse: with truncated and corrupt JPEGs in the
// data and bad_images: skip, a run's weights do not depend on which worker
// met a bad file, nor on where it was interrupted: reruns, 0, 1 or 4
// workers and an interrupt + resume end bit-identical, having skipped the
// same files. Before each libjpeg-turbo handle was reset after a failure,
// the image after a bad one on the same worker was refused ("JPEG header
// says 0x0") or decoded by image/jpeg, so each of these gave other weights.
func TestBadJPEGsChangeNothingElse(t *testing.T) {
	if err := data.TurboAvailable(); err != nil {
		t.Logf("libjpeg-turbo is not installed: only image/jpeg is tested (%v)", err)
	}
	root := datasetWithBadJPEGs(t)
	config1 := func(workers int) config.Config {
		c := tinyConfig(t)
		c.Data.Root = root
		c.Data.BadImages = "skip"
		c.Data.Workers = config.Workers(workers)
		return c
	}
	run := func(c config.Config, opt Options) ([]model.NamedTensor, []string) {
		t.Helper()
		opt.Out = new(bytes.Buffer)
		sum, err := Run(context.Background(), c, opt)
		if err != nil {
			t.Fatalf("%d workers: %v", c.Data.Workers, err)
		}
		var skipped []string
		for _, m := range sum.Epochs {
			skipped = append(skipped, m.SkippedImages...)
		}
		return lastWeights(t, c.Train.Out), skipped
	}

	want, wantSkipped := run(config1(4), Options{})
	if len(wantSkipped) == 0 {
		t.Fatal("no image was skipped: the test's bad files all decode")
	}
	t.Logf("skipped over 2 epochs: %d images", len(wantSkipped))
	same := func(what string, got []model.NamedTensor) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d tensors, want %d", what, len(got), len(want))
		}
		for i := range want {
			for j := range want[i].Data {
				if got[i].Data[j] != want[i].Data[j] {
					t.Fatalf("%s: %s[%d] = %v, 4 workers gave %v", what, want[i].Name, j, got[i].Data[j], want[i].Data[j])
				}
			}
		}
	}
	for _, w := range []int{4, 0, 1, 4} {
		got, skipped := run(config1(w), Options{})
		same(fmt.Sprintf("rerun with %d workers", w), got)
		if !slices.Equal(skipped, wantSkipped) {
			t.Errorf("%d workers skipped %v, the first run %v", w, skipped, wantSkipped)
		}
	}

	// 34 training images - the skipped, in batches of 8: 4 steps an epoch.
	// Inside the first epoch on 4 workers, inside the second inline: each
	// step and each worker count once (all four pairs cost four cnn runs more).
	for _, kw := range [][2]int{{2, 4}, {5, 0}} {
		k, w := kw[0], kw[1]
		c := config1(w)
		interruptAfter(t, fmt.Sprintf("%d workers", w), c, Options{}, k)
		c.Train.Resume = c.Train.Out
		got, _ := run(c, Options{})
		same(fmt.Sprintf("interrupted after step %d and resumed, %d workers", k, w), got)
	}
}

// png16Header is a PNG signature and IHDR for a w x h 16-bit RGBA image,
// with no pixel data: what decides its decode's memory is in the header.
func png16Header(t *testing.T, w, h uint32) []byte {
	b := hugePNGHeader(t, w, h)
	b[8+8+8] = 16 // bit depth; colour type 6 (RGBA) already
	binary.BigEndian.PutUint32(b[8+8+13:], crc32.ChecksumIEEE(b[8+4:8+8+13]))
	return b
}

// TestDecodeBudgetInARun: a 16-bit RGBA PNG of 7000x7000 pixels, under
// max_pixels but 588 MB to decode, stops the run naming the file and
// data.max_decode_bytes, or is skipped and listed; a raised budget lets
// the decode go on to the pixels (here missing).
func TestDecodeBudgetInARun(t *testing.T) {
	for _, tc := range []struct {
		policy string
		budget int
		want   string // in the error; "" = skipped
	}{
		{"fail", 0, "max_decode_bytes"},
		{"skip", 0, ""},
		{"fail", 1 << 30, "corrupt or truncated"},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.policy, tc.budget), func(t *testing.T) {
			c := tinyConfig(t)
			c.Train.Epochs = 1
			c.Data.BadImages = tc.policy
			if tc.budget > 0 {
				c.Data.MaxDecode = tc.budget
			}
			c.Data.Root = copyTinyDataset(t)
			path := write(t, filepath.Join(c.Data.Root, "train", firstClass(t, c.Data.Root)), "bomb16.png", png16Header(t, 7000, 7000))
			sum, err := runWithin(t, c)
			t.Logf("what the user sees: %v", err)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), "bomb16.png") || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one naming bomb16.png and saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := sum.Epochs[0].SkippedImages; len(got) != 1 || got[0] != path {
				t.Fatalf("skipped %v, want [%s]", got, path)
			}
		})
	}
}

// TestClassLinkedToItsSplitIsRefused: train/x -> . is a loop, not a class
// of every image.
func TestClassLinkedToItsSplitIsRefused(t *testing.T) {
	c := tinyConfig(t)
	c.Data.Root = copyTinyDataset(t)
	if err := os.Symlink(".", filepath.Join(c.Data.Root, "train", "x")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	write(t, filepath.Join(c.Data.Root, "val", "x"), "a.jpg", encodeJPEG(t, 8, 8))
	_, err := runWithin(t, c)
	t.Logf("what the user sees: %v", err)
	if err == nil || !strings.Contains(err.Error(), filepath.Join("train", "x")) || !strings.Contains(err.Error(), "loop") {
		t.Fatalf("error %v, want one naming train/x as a loop", err)
	}
}
