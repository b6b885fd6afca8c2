package data

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzScanShard: a shard of any bytes is read or refused, never a panic or
// a hang, and every sample it gives lies inside the file with a label
// within classes.txt's.
func FuzzScanShard(f *testing.F) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range []member{{"a.jpg", []byte("\xff\xd8\xff")}, {"a.cls", []byte("1\n")}, {"b.json", []byte("{}")}, {"b.png", []byte("\x89PNG")}, {"b.cls", []byte("0")}} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: m.name, Mode: 0o644, Size: int64(len(m.body))})
		tw.Write(m.body)
	}
	tw.Close()
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:700])
	f.Add([]byte{})
	classes := []string{"x", "y"}
	f.Fuzz(func(t *testing.T, b []byte) {
		file := filepath.Join(t.TempDir(), "s.tar")
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		samples, _, err := scanShard(Shard{Path: file, Size: int64(len(b))}, classes, false)
		skipping, _, serr := scanShard(Shard{Path: file, Size: int64(len(b))}, classes, true)
		if serr != nil && err == nil {
			t.Fatalf("refused when skipping (%v), read when not", serr)
		}
		for _, s := range append(samples, skipping...) {
			if s.Offset < 0 || s.Size < 0 || s.Offset+s.Size > int64(len(b)) || s.Label < 0 || s.Label >= len(classes) || !localName(s.Name) || !IsImagePath(s.Name) {
				t.Fatalf("sample %+v of a %d-byte shard", s, len(b))
			}
		}
	})
}
