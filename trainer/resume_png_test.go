package trainer

import (
	"bytes"
	"context"
	"image/jpeg"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pngDataset is the tiny dataset with every JPEG re-encoded as a PNG of the
// same name (x.jpg becomes x.png), in a folder of the test's own.
func pngDataset(t *testing.T) string {
	t.Helper()
	root := copyDataset(t)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.EqualFold(filepath.Ext(path), ".jpg") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		img, err := jpeg.Decode(f)
		f.Close()
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			return err
		}
		if err := os.WriteFile(strings.TrimSuffix(path, filepath.Ext(path))+".png", b.Bytes(), 0o644); err != nil {
			return err
		}
		return os.Remove(path)
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestResumeOfAnAllPNGSetIgnoresTheJPEGDecoder: the JPEG decoder decides
// nothing on a dataset without JPEGs, so a checkpoint whose run resolved
// data.decoder to the other JPEG decoder (another machine, with or without
// libjpeg-turbo) resumes; it used to be refused with "decoded JPEGs with".
func TestResumeOfAnAllPNGSetIgnoresTheJPEGDecoder(t *testing.T) {
	c := tinyConfig(t)
	c.Data.Root = pngDataset(t)
	c.Train.Epochs = 1
	runOK(t, c)
	other := "image/jpeg"
	if resolvedDecoder(c.Data.Decoder) == other {
		other = "libjpeg-turbo"
	}
	editState(t, c.Train.Out, "decoder", other)
	c.Train.Resume, c.Train.Epochs = c.Train.Out, 2
	var out bytes.Buffer
	if _, err := Run(context.Background(), c, Options{Out: &out}); err != nil {
		t.Fatalf("resuming an all-PNG run recorded under %s: %v", other, err)
	}
	if !strings.Contains(out.String(), "PNG decoder image/png") {
		t.Errorf("the run does not say it decodes with image/png:\n%s", out.String())
	}
}
