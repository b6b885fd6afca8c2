package data

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// mkTree creates files (empty) and folders (names ending in "/") under root.
func mkTree(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(root, n)
		if strings.HasSuffix(n, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestScanErrors(t *testing.T) {
	tests := []struct {
		name     string
		files    []string
		root     string // relative to the temp dir; default "ds"
		want     []string
		notExist bool // errors.Is(err, fs.ErrNotExist); otherwise ErrLayout
	}{
		{name: "missing root", root: "nope", want: []string{"nope", "does not exist", "train gen-data --out"}, notExist: true},
		{name: "no train", files: []string{"ds/val/a/1.jpg"}, want: []string{filepath.Join("ds", "train")}, notExist: true},
		{name: "no val", files: []string{"ds/train/a/1.jpg"}, want: []string{filepath.Join("ds", "val")}, notExist: true},
		{name: "val class missing from train", files: []string{"ds/train/cat/1.jpg", "ds/val/cat/1.jpg", "ds/val/dog/1.jpg"},
			want: []string{`val class "dog" missing from`}},
		{name: "train class missing from val", files: []string{"ds/train/cat/1.jpg", "ds/train/emu/1.jpg", "ds/val/cat/1.jpg"},
			want: []string{`train class "emu" missing from`}},
		{name: "empty class folder", files: []string{"ds/train/cat/1.jpg", "ds/train/dog/notes.txt", "ds/val/cat/1.jpg", "ds/val/dog/1.png"},
			want: []string{filepath.Join("ds", "train", "dog"), "no .jpg"}},
		{name: "no images at all", files: []string{"ds/train/readme.txt", "ds/val/"}, want: []string{"no class folders"}},
		{name: "root is a file", files: []string{"ds"}, want: []string{"is a file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mkTree(t, dir, tc.files...)
			root := tc.root
			if root == "" {
				root = "ds"
			}
			_, _, err := Scan(filepath.Join(dir, root))
			if err == nil {
				t.Fatal("Scan succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if got := errors.Is(err, fs.ErrNotExist); got != tc.notExist {
				t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v (err: %v)", got, tc.notExist, err)
			}
			if !tc.notExist && !errors.Is(err, ErrLayout) {
				t.Errorf("error %v does not wrap ErrLayout", err)
			}
		})
	}
}

func TestScanLayout(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "ds")
	mkTree(t, root,
		"train/zebra/b.JPG", "train/zebra/a.jpeg", "train/zebra/sub/deeper/c.png", "train/zebra/skip.txt",
		"train/ant/x.jpg", "train/.hidden/y.jpg", "train/loose.jpg",
		"val/zebra/v.PNG", "val/ant/w.jpg", "val/ant/.z.jpg",
	)
	train, val, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ant", "zebra"}; !slices.Equal(train.Classes, want) || !slices.Equal(val.Classes, want) {
		t.Errorf("classes = %v / %v, want %v", train.Classes, val.Classes, want)
	}
	var got []string
	for _, s := range train.Samples {
		rel, _ := filepath.Rel(root, s.Path)
		got = append(got, train.Classes[s.Label]+":"+filepath.ToSlash(rel))
	}
	want := []string{"ant:train/ant/x.jpg", "zebra:train/zebra/a.jpeg", "zebra:train/zebra/b.JPG", "zebra:train/zebra/sub/deeper/c.png"}
	if !slices.Equal(got, want) {
		t.Errorf("train samples =\n%v\nwant\n%v", got, want)
	}
	if len(val.Samples) != 2 || val.Root != filepath.Join(root, "val") {
		t.Errorf("val = %+v", val)
	}
}

func TestScanSymlinks(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "ds")
	mkTree(t, root, "train/a/1.jpg", "val/a/1.jpg", "elsewhere/b/2.jpg", "elsewhere/b/3.jpg", "outside/4.jpg")
	mkTree(t, dir, "vb/5.jpg")
	links := [][2]string{
		{"..", "train/a/loop"},                        // a loop back to train/
		{".", "train/a/self"},                         // a loop onto itself
		{"../elsewhere/b", "train/b"},                 // symlinked class folder: followed
		{"../../outside/4.jpg", "train/a/linked.jpg"}, // symlinked file: followed
		{"../../outside", "train/a/linkdir"},          // symlinked folder below a class: not followed
		{"../../vb", "val/b"},
	}
	for _, l := range links {
		if err := os.Symlink(l[0], filepath.Join(root, l[1])); err != nil {
			t.Skip("symlinks unavailable:", err)
		}
	}
	type res struct {
		train *Index
		err   error
	}
	done := make(chan res, 1)
	go func() {
		tr, _, err := Scan(root)
		done <- res{tr, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		var got []string
		for _, s := range r.train.Samples {
			rel, _ := filepath.Rel(root, s.Path)
			got = append(got, filepath.ToSlash(rel))
		}
		want := []string{"train/a/1.jpg", "train/a/linked.jpg", "train/b/2.jpg", "train/b/3.jpg"}
		if !slices.Equal(got, want) {
			t.Errorf("samples = %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Scan did not return within 10s: symlink loop followed")
	}
}

// TestListFilesTellsDatasetsApart: the file list is the same wherever the
// dataset lies and changes with any file added, resized or renamed.
func TestListFilesTellsDatasetsApart(t *testing.T) {
	make := func(extra func(root string)) FileList {
		t.Helper()
		root := t.TempDir()
		mkTree(t, root, "train/a/1.jpg", "train/b/2.jpg", "val/a/3.jpg", "val/b/4.jpg")
		if extra != nil {
			extra(root)
		}
		tr, va, err := Scan(root)
		if err != nil {
			t.Fatal(err)
		}
		fl, err := ListFiles(tr, va)
		if err != nil {
			t.Fatal(err)
		}
		return fl
	}
	base := make(nil)
	if base.Train != 2 || base.Val != 2 || len(base.SHA256) != 64 {
		t.Fatalf("file list %+v", base)
	}
	if again := make(nil); again != base {
		t.Errorf("the same files elsewhere: %+v, then %+v", base, again)
	}
	write := func(rel, text string) func(string) {
		return func(root string) { os.WriteFile(filepath.Join(root, rel), []byte(text), 0o644) }
	}
	for name, change := range map[string]func(string){
		"added":   write("train/a/5.jpg", ""),
		"resized": write("train/a/1.jpg", "x"),
		"renamed": func(root string) { os.Rename(filepath.Join(root, "val/b/4.jpg"), filepath.Join(root, "val/b/9.jpg")) },
	} {
		if got := make(change); got.SHA256 == base.SHA256 {
			t.Errorf("%s: digest unchanged (%+v)", name, got)
		}
	}
}

// TestScanKeepsClassNameBytes: a class folder whose name is not UTF-8 keeps
// its bytes as they are.
func TestScanKeepsClassNameBytes(t *testing.T) {
	root := t.TempDir()
	odd := "caf\xe9" // Latin-1, not UTF-8
	mkTree(t, root, "train/"+odd+"/1.jpg", "train/b/2.jpg", "val/"+odd+"/3.jpg", "val/b/4.jpg")
	tr, _, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.Classes, []string{"b", odd}) {
		t.Errorf("classes %q", tr.Classes)
	}
}

// TestScanRefusesAClassLinkedToItsAncestor: train/x -> . (or ..) is a
// loop, refused naming the link, not a class holding every image.
func TestScanRefusesAClassLinkedToItsAncestor(t *testing.T) {
	for _, target := range []string{".", "..", "../.."} {
		t.Run(target, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "ds")
			mkTree(t, root, "train/a/1.jpg", "train/b/2.jpg", "val/a/1.jpg", "val/b/2.jpg", "val/x/3.jpg")
			link := filepath.Join(root, "train", "x")
			if err := os.Symlink(target, link); err != nil {
				t.Skip("symlinks unavailable:", err)
			}
			tr, _, err := Scan(root)
			t.Logf("what the user sees: %v", err)
			if err == nil {
				t.Fatalf("Scan accepted train/x -> %s: %d samples, %v", target, len(tr.Samples), tr.Classes)
			}
			if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "loop") {
				t.Errorf("error %v, want an ErrLayout naming %s as a loop", err, link)
			}
		})
	}
	// A link to a sibling class or a folder elsewhere is no loop.
	root := filepath.Join(t.TempDir(), "ds")
	mkTree(t, root, "train/a/1.jpg", "val/a/1.jpg", "val/x/2.jpg", "other/3.jpg")
	if err := os.Symlink("../other", filepath.Join(root, "train", "x")); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	if _, _, err := Scan(root); err != nil {
		t.Errorf("train/x -> ../other: %v", err)
	}
}
