package trainer

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"stoke/config"
)

// badInputs are the inputs of docs/bad-input.md: each is put into a copy of
// the tiny dataset and trained on, as a user would meet it.
var badInputs = []struct {
	name string
	// make writes the input into class folder dir and returns its path.
	make func(t *testing.T, dir string) string
	// decodable inputs train in bad_images: fail mode; the others stop the
	// run with an error containing want (and the file's name), or are
	// skipped and listed in skip mode.
	decodable bool
	want      string
}{
	{"truncated JPEG", func(t *testing.T, dir string) string {
		b := encodeJPEG(t, 24, 24)
		return write(t, dir, "truncated.jpg", b[:len(b)/2])
	}, false, "corrupt or truncated"},
	{"zero-byte file", func(t *testing.T, dir string) string { return write(t, dir, "empty.jpg", nil) }, false, "empty"},
	{"text file named .jpg", func(t *testing.T, dir string) string {
		return write(t, dir, "notes.jpg", []byte("these are my notes, not a picture\n"))
	}, false, "unsupported image format"},
	{"header claims 60000x60000", func(t *testing.T, dir string) string {
		return write(t, dir, "huge.png", hugePNGHeader(t, 60000, 60000))
	}, false, "too large"},
	{"PNG", func(t *testing.T, dir string) string {
		var buf bytes.Buffer
		png.Encode(&buf, image.NewNRGBA(image.Rect(0, 0, 20, 30)))
		return write(t, dir, "p.png", buf.Bytes())
	}, true, ""},
	{"grayscale JPEG", func(t *testing.T, dir string) string { return copyFixture(t, dir, "gray.jpg") }, true, ""},
	{"CMYK JPEG", func(t *testing.T, dir string) string { return copyFixture(t, dir, "cmyk.jpg") }, true, ""},
	{"progressive JPEG", func(t *testing.T, dir string) string { return copyFixture(t, dir, "progressive.jpg") }, true, ""},
	{"1x1 image", func(t *testing.T, dir string) string { return write(t, dir, "dot.jpg", encodeJPEG(t, 1, 1)) }, true, ""},
	{"upper-case extension", func(t *testing.T, dir string) string { return write(t, dir, "UP.JPEG", encodeJPEG(t, 9, 7)) }, true, ""},
	{"folder named .jpg", func(t *testing.T, dir string) string {
		p := filepath.Join(dir, "folder.jpg")
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, p, "inner.jpg", encodeJPEG(t, 8, 8)) // a folder below a class is searched too
		return p
	}, true, ""},
}

func TestBadInputs(t *testing.T) {
	for _, tc := range badInputs {
		for _, policy := range []string{"fail", "skip"} {
			if tc.decodable && policy == "skip" {
				continue
			}
			t.Run(tc.name+"/"+policy, func(t *testing.T) {
				c := tinyConfig(t)
				c.Train.Epochs = 1
				c.Data.BadImages = policy
				c.Data.Root = copyTinyDataset(t)
				path := tc.make(t, filepath.Join(c.Data.Root, "train", firstClass(t, c.Data.Root)))
				sum, err := runWithin(t, c)
				t.Logf("what the user sees: %v", err)
				switch {
				case tc.decodable:
					if err != nil {
						t.Fatalf("a decodable input stopped the run: %v", err)
					}
				case policy == "fail":
					if err == nil || !strings.Contains(err.Error(), filepath.Base(path)) || !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("error %v, want one naming %s and saying %q", err, filepath.Base(path), tc.want)
					}
				default: // skip
					if err != nil {
						t.Fatalf("bad_images: skip, but the run failed: %v", err)
					}
					if got := sum.Epochs[0].SkippedImages; len(got) != 1 || got[0] != path {
						t.Fatalf("skipped %v, want [%s]", got, path)
					}
				}
			})
		}
	}
}

func TestBadDatasets(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(t *testing.T, root string)
		want string // "" = trains
	}{
		{"empty class folder", func(t *testing.T, root string) {
			os.MkdirAll(filepath.Join(root, "train", "zz_empty"), 0o755)
			os.MkdirAll(filepath.Join(root, "val", "zz_empty"), 0o755)
		}, "zz_empty"},
		{"val class missing from train", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "val", "zz_extra"), "a.jpg", encodeJPEG(t, 8, 8))
		}, "zz_extra"},
		{"one class", func(t *testing.T, root string) {
			for _, split := range []string{"train", "val"} {
				entries, _ := os.ReadDir(filepath.Join(root, split))
				for _, e := range entries[1:] {
					os.RemoveAll(filepath.Join(root, split, e.Name()))
				}
			}
		}, "at least two classes"},
		{"symlink loop", func(t *testing.T, root string) {
			class := filepath.Join(root, "train", firstClass(t, root))
			if err := os.Symlink(class, filepath.Join(class, "loop")); err != nil {
				t.Skip("no symlinks here:", err)
			}
		}, ""},
		{"no val folder", func(t *testing.T, root string) { os.RemoveAll(filepath.Join(root, "val")) }, "val"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyConfig(t)
			c.Train.Epochs = 1
			c.Data.Root = copyTinyDataset(t)
			tc.mut(t, c.Data.Root)
			_, err := runWithin(t, c)
			t.Logf("what the user sees: %v", err)
			if tc.want == "" && err != nil {
				t.Fatalf("run failed: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestUnreadableFile needs a user that permissions stop: root reads anything.
func TestUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: file permissions do not stop reads")
	}
	c := tinyConfig(t)
	c.Train.Epochs = 1
	c.Data.Root = copyTinyDataset(t)
	p := write(t, filepath.Join(c.Data.Root, "train", firstClass(t, c.Data.Root)), "locked.jpg", encodeJPEG(t, 8, 8))
	os.Chmod(p, 0)
	if _, err := runWithin(t, c); err == nil || !strings.Contains(err.Error(), "locked.jpg") {
		t.Fatalf("error %v, want one naming locked.jpg", err)
	}
}

// runWithin runs c and fails the test if it does not return within a
// minute: bad input must never hang the run.
func runWithin(t *testing.T, c config.Config) (*Summary, error) {
	t.Helper()
	type result struct {
		s   *Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)})
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(time.Minute):
		t.Fatal("the run hung")
		return nil, nil
	}
}

func copyTinyDataset(t *testing.T) string {
	t.Helper()
	src, err := tinyDataset()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "ds")
	if err := os.CopyFS(root, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return root
}

func firstClass(t *testing.T, root string) string {
	entries, err := os.ReadDir(filepath.Join(root, "train"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("no class folders in %s: %v", root, err)
	}
	return entries[0].Name()
}

func write(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func copyFixture(t *testing.T, dir, name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name, b)
}

func encodeJPEG(t *testing.T, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(10 * x), uint8(10 * y), 128, 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// hugePNGHeader is a PNG whose header claims w x h pixels, with no pixel
// data: a decoder that trusts it would try to allocate w*h*4 bytes.
func hugePNGHeader(t *testing.T, w, h uint32) []byte {
	var buf bytes.Buffer
	buf.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk := append([]byte("IHDR"), ihdr...)
	binary.Write(&buf, binary.BigEndian, uint32(len(ihdr)))
	buf.Write(chunk)
	binary.Write(&buf, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return buf.Bytes()
}
