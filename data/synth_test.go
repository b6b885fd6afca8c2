package data

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// hashTree hashes every file's relative path and content under root.
func hashTree(t *testing.T, root string) (string, int) {
	t.Helper()
	h := sha256.New()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), n
}

func TestGenerateDeterministic(t *testing.T) {
	opt := SynthOptions{Classes: 4, Train: 5, Val: 2, Size: 20, Seed: 3}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := Generate(a, opt); err != nil {
		t.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(1) // a different number of goroutines must not matter
	err := Generate(b, opt)
	runtime.GOMAXPROCS(prev)
	if err != nil {
		t.Fatal(err)
	}
	ha, na := hashTree(t, a)
	hb, _ := hashTree(t, b)
	if ha != hb {
		t.Error("two runs with the same options wrote different files")
	}
	if want := 4*(5+2) + 1; na != want {
		t.Errorf("%d files, want %d (images + manifest)", na, want)
	}
	opt.Seed = 4
	c := filepath.Join(dir, "c")
	if err := Generate(c, opt); err != nil {
		t.Fatal(err)
	}
	if hc, _ := hashTree(t, c); hc == ha {
		t.Error("another seed wrote the same files")
	}

	train, val, err := Scan(a)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(train.Classes, SynthClasses(4)) || len(train.Samples) != 20 || len(val.Samples) != 8 {
		t.Errorf("classes %v, %d train, %d val; want %v, 20, 8", train.Classes, len(train.Samples), len(val.Samples), SynthClasses(4))
	}
	img, err := Decode(train.Samples[0].Path, 0)
	if err != nil || img.Bounds().Dx() != 20 || img.Bounds().Dy() != 20 {
		t.Errorf("first image: %v, %v; want a 20x20 JPEG", img, err)
	}
	if want := filepath.Join(a, "train", "00_red_circle", "00000.jpg"); train.Samples[0].Path != want {
		t.Errorf("first sample %s, want %s", train.Samples[0].Path, want)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "partial") {
			t.Errorf("temporary folder %s left behind", e.Name())
		}
	}
}

// Classes must differ by shape and colour together: no colour and no shape
// names one class alone (with more than 7 classes), and names are unique.
func TestSynthClasses(t *testing.T) {
	names := SynthClasses(MaxSynthClasses)
	seen := map[string]bool{}
	for _, n := range names {
		key := n[strings.Index(n, "_")+1:]
		if seen[key] {
			t.Errorf("class %s repeats an earlier combination", n)
		}
		seen[key] = true
	}
	if got := SynthClasses(10); got[0] != "00_red_circle" || got[9] != "09_magenta_triangle" {
		t.Errorf("SynthClasses(10) = %v", got)
	}
	if got := SynthClasses(101)[100]; !strings.HasPrefix(got, "100_") || SynthClasses(101)[0][:4] != "000_" {
		t.Errorf("wide numbering: %s", got)
	}
}

func TestGenerateRefuses(t *testing.T) {
	dir := t.TempDir()
	opt := SynthOptions{Classes: 2, Train: 1, Val: 1, Size: 16}
	full := filepath.Join(dir, "full")
	mkTree(t, full, "keep.txt")
	if err := Generate(full, opt); err == nil || !strings.Contains(err.Error(), full) || !strings.Contains(err.Error(), "not overwriting") {
		t.Errorf("Generate into a non-empty folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(full, "keep.txt")); err != nil {
		t.Error("the existing file was touched")
	}
	empty := filepath.Join(dir, "empty")
	mkTree(t, empty+"/")
	if err := Generate(empty, opt); err != nil {
		t.Errorf("Generate into an empty folder: %v", err)
	}
	for _, bad := range []SynthOptions{{Classes: 1, Train: 1, Val: 1, Size: 16}, {Classes: 2, Train: 0, Val: 1, Size: 16},
		{Classes: 2, Train: 1, Val: 1, Size: 8}, {Classes: 2, Train: 1, Val: 1, Size: 16, Quality: 101}, {Classes: 106, Train: 1, Val: 1, Size: 16}} {
		if err := Generate(filepath.Join(dir, "bad"), bad); err == nil {
			t.Errorf("Generate(%+v) succeeded", bad)
		}
	}
}

func TestEnsureSynthetic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache", "ds")
	opt := SynthOptions{Classes: 3, Train: 2, Val: 1, Size: 16, Seed: 1}
	steps := []struct {
		name    string
		prepare func()
		opt     SynthOptions
		gen     bool
		wantErr string
	}{
		{name: "absent: generates", opt: opt, gen: true},
		{name: "present: checks", opt: opt},
		{name: "other options", opt: SynthOptions{Classes: 3, Train: 2, Val: 1, Size: 16, Seed: 2}, wantErr: "other options"},
		{name: "a file missing", prepare: func() { os.Remove(filepath.Join(dir, "val", "01_green_square_striped", "00000.jpg")) }, opt: opt, wantErr: "01_green_square_striped"},
		{name: "no manifest", prepare: func() { os.Remove(filepath.Join(dir, manifestName)) }, opt: opt, wantErr: "not a complete generated dataset"},
	}
	for _, s := range steps {
		if s.prepare != nil {
			s.prepare()
		}
		gen, err := EnsureSynthetic(dir, s.opt)
		if gen != s.gen {
			t.Errorf("%s: generated = %v, want %v", s.name, gen, s.gen)
		}
		switch {
		case s.wantErr == "" && err != nil:
			t.Errorf("%s: %v", s.name, err)
		case s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)):
			t.Errorf("%s: error %v, want one saying %q", s.name, err, s.wantErr)
		case s.wantErr != "" && !errors.Is(err, ErrLayout):
			t.Errorf("%s: error %v does not wrap ErrLayout", s.name, err)
		}
	}
}
