package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPredictCommand: `train predict` with flags among the files, names
// that are not printable UTF-8 and a file that cannot be read. Every other
// file is predicted; the bad one is named on stderr and the exit status is
// 1; names are shown so that they read back to their bytes: Go-quoted in
// text, and in JSON as themselves or, when not UTF-8, Go-quoted beside
// their bytes in base64.
func TestPredictCommand(t *testing.T) {
	args, runDir := smallArgs(t, "--epochs", "1")
	runOrFail(t, command(args...))
	root, _ := smallDataset()
	good, _ := filepath.Glob(filepath.Join(root, "val", "*", "*.jpg"))
	if len(good) == 0 {
		t.Fatalf("no val images in %s", root)
	}
	img, err := os.ReadFile(good[0])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	names := []string{"nl\nname.jpg", "bad\xffname.jpg", "-x.jpg"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	newline, notUTF8, dash := filepath.Join(dir, names[0]), filepath.Join(dir, names[1]), filepath.Join(dir, names[2])
	folder := filepath.Join(dir, "sub.jpg")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	predicted := []string{good[0], newline, notUTF8, dash}

	// Text: --top after the files, -- before a file named like a flag.
	var out, errb bytes.Buffer
	code := run([]string{"predict", "--checkpoint", runDir, good[0], newline, "--top", "2", notUTF8, folder, "--", dash}, &out, &errb)
	if code != 1 {
		t.Errorf("exit %d with one unreadable file, want 1; stderr:\n%s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(predicted) {
		t.Fatalf("%d lines for %d readable files:\n%s", len(lines), len(predicted), out.String())
	}
	for i, l := range lines {
		name, classes := splitPrediction(t, l)
		if name != predicted[i] {
			t.Errorf("line %d names %q, want %q: %q", i, name, predicted[i], l)
		}
		if n := strings.Count(classes, "%"); n != 2 {
			t.Errorf("line %d: %d classes with --top 2 after the files: %q", i, n, l)
		}
	}
	for _, want := range []string{"train predict: " + folder + ": cannot read file: not a regular file: it is a folder", "1 of 5 files could not be predicted"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}

	// JSON: one object per file, the failed one with its error.
	out.Reset()
	errb.Reset()
	code = run([]string{"predict", "--json", "--checkpoint", runDir, good[0], newline, notUTF8, folder, "--", dash}, &out, &errb)
	if code != 1 {
		t.Errorf("--json: exit %d, want 1", code)
	}
	var objs []predictionLine
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var o predictionLine
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		objs = append(objs, o)
	}
	want := []string{good[0], newline, notUTF8, folder, dash}
	if len(objs) != len(want) {
		t.Fatalf("%d objects for %d files:\n%s", len(objs), len(want), out.String())
	}
	for i, o := range objs {
		name := o.File
		if o.FileBase64 != "" {
			b, err := base64.StdEncoding.DecodeString(o.FileBase64)
			if err != nil {
				t.Fatal(err)
			}
			name = string(b)
		}
		if name != want[i] {
			t.Errorf("object %d: file %q, file_base64 %q: names %q, want %q", i, o.File, o.FileBase64, name, want[i])
		}
		if (want[i] == folder) != (o.Error != "" && o.Top == nil) {
			t.Errorf("object %d (%q): error %q, top %v", i, want[i], o.Error, o.Top)
		}
	}
	if objs[2].FileBase64 == "" || objs[1].FileBase64 != "" {
		t.Errorf("file_base64 is for names that are not UTF-8 only: %+v", objs[1:3])
	}

	// Every file readable: exit 0.
	out.Reset()
	errb.Reset()
	if code := run([]string{"predict", "--checkpoint", runDir, good[0]}, &out, &errb); code != 0 || errb.Len() != 0 {
		t.Errorf("one good file: exit %d, stderr %q", code, errb.String())
	}
}

// splitPrediction splits a text line of predict into the file's name (a
// Go-quoted one unquoted) and the rest.
func splitPrediction(t *testing.T, line string) (name, rest string) {
	t.Helper()
	if strings.HasPrefix(line, `"`) {
		q, err := strconv.QuotedPrefix(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		name, _ = strconv.Unquote(q)
		return name, line[len(q):]
	}
	i := strings.Index(line, ":  ")
	if i < 0 {
		t.Fatalf("no name in %q", line)
	}
	return line[:i], line[i:]
}
