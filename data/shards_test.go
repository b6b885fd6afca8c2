package data

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// smallFolder is a generated ImageFolder of 3 classes x (3 train + 1 val)
// images of 16 px.
func smallFolder(t *testing.T) (root string, train, val *Index) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "folder")
	if err := Generate(root, SynthOptions{Classes: 3, Train: 3, Val: 1, Size: 16, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	train, val, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, train, val
}

// readAll reads every sample of ix through a SampleReader.
func readAll(t *testing.T, ix *Index) [][]byte {
	t.Helper()
	r := NewSampleReader(ix)
	defer r.Close()
	var d Decoder
	var out [][]byte
	for i := range ix.Samples {
		b, err := r.Read(&d, i)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.Clone(b))
	}
	return out
}

// sameSamples checks that got lists want's images (bytes) with want's
// labels, in want's order.
func sameSamples(t *testing.T, what string, got, want *Index) {
	t.Helper()
	if len(got.Samples) != len(want.Samples) {
		t.Fatalf("%s: %d samples, want %d", what, len(got.Samples), len(want.Samples))
	}
	gb, wb := readAll(t, got), readAll(t, want)
	for i := range want.Samples {
		if got.Samples[i].Label != want.Samples[i].Label || !bytes.Equal(gb[i], wb[i]) {
			t.Errorf("%s: sample %d is %s (class %d, %d bytes), want %s (class %d, %d bytes)", what, i,
				got.Samples[i].Path, got.Samples[i].Label, len(gb[i]), want.Samples[i].Path, want.Samples[i].Label, len(wb[i]))
		}
	}
}

// TestPackReadsBackAsItsImageFolder: Scan of `train pack`'s output lists
// the ImageFolder's samples, labels and bytes in its order, across several
// shards, with the class names of classes.txt; through the index files and
// without them (a scan of the tar headers) alike. The loader opens each
// shard once for the whole epoch.
func TestPackReadsBackAsItsImageFolder(t *testing.T) {
	_, train, val := smallFolder(t)
	out := filepath.Join(t.TempDir(), "shards")
	st, err := Pack(context.Background(), train, val, out, 2<<10)
	if err != nil {
		t.Fatal(err)
	}
	if st.Shards[0] < 3 || st.Samples[0] != len(train.Samples) {
		t.Fatalf("packed %+v: want several train shards of %d samples", st, len(train.Samples))
	}
	check := func(what string) {
		t.Helper()
		st, sv, err := Scan(out)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !slices.Equal(st.Classes, train.Classes) || !slices.Equal(sv.Classes, train.Classes) {
			t.Errorf("%s: classes %q, want %q", what, st.Classes, train.Classes)
		}
		sameSamples(t, what+", train", st, train)
		sameSamples(t, what+", val", sv, val)
	}
	check("with the index files")
	idx, _ := filepath.Glob(filepath.Join(out, "*", "*.tar"+ShardIndexSuffix))
	if len(idx) != st.Shards[0]+st.Shards[1] {
		t.Fatalf("%d index files for %d shards", len(idx), st.Shards[0]+st.Shards[1])
	}
	for _, f := range idx {
		os.Remove(f)
	}
	check("without them")

	st2, _, err := Scan(out)
	if err != nil {
		t.Fatal(err)
	}
	r := NewSampleReader(st2)
	var d Decoder
	for i := range st2.Samples {
		if _, err := r.Read(&d, i); err != nil {
			t.Fatal(err)
		}
	}
	if r.Opened() != len(st2.Shards) {
		t.Errorf("reading every sample opened %d shards, want each of the %d once", r.Opened(), len(st2.Shards))
	}
	r.Close()
}

// TestPackRefusesItsOwnDataFolderAndAFullOne: --out inside --data, or
// holding a file, is refused with a message that says so, and nothing is
// written.
func TestPackRefusesItsOwnDataFolderAndAFullOne(t *testing.T) {
	root, train, val := smallFolder(t)
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "keep.txt"), []byte("x"), 0o644)
	for _, tc := range []struct{ out, want string }{
		{filepath.Join(root, "shards"), "inside the dataset folder"},
		{root, "is the dataset folder"},
		{full, "is not empty"},
	} {
		_, err := Pack(context.Background(), train, val, tc.out, DefaultShardBytes)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Pack --out %s: error %v, want one saying %q", tc.out, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "shards")); err == nil {
		t.Error("Pack made --out inside the dataset folder")
	}
	if entries, _ := os.ReadDir(full); len(entries) != 1 {
		t.Errorf("Pack wrote into the non-empty folder: %d entries", len(entries))
	}
}

// member is one tar member of a hand-made shard.
type member struct {
	name string
	body []byte
}

// foreignMembers lays the samples of ix out as another tool would: the
// .cls before the image for every other sample, a .json beside each, a
// stray notes.txt, keys of the tool's choosing. It returns one list of
// members per shard (two shards for train).
func foreignMembers(t *testing.T, ix *Index, shards int) [][]member {
	t.Helper()
	out := make([][]member, shards)
	for i, s := range ix.Samples {
		img, err := os.ReadFile(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		key := "sample_" + strconv.Itoa(i)
		ext := strings.ToLower(filepath.Ext(s.Path))
		im := member{key + ext, img}
		cls := member{key + ".cls", []byte(strconv.Itoa(s.Label) + "\n")}
		meta := member{key + ".json", []byte(`{"src":"` + filepath.Base(s.Path) + `"}`)}
		k := i * shards / len(ix.Samples)
		if i%2 == 0 {
			out[k] = append(out[k], cls, meta, im)
		} else {
			out[k] = append(out[k], im, meta, cls)
		}
	}
	out[0] = append([]member{{"notes.txt", []byte("written by hand")}}, out[0]...)
	return out
}

// writeForeign writes train and val shards with write, which makes one
// tar file of members.
func writeForeign(t *testing.T, train, val *Index, write func(tarPath string, ms []member)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "foreign")
	for _, sp := range []struct {
		name string
		ix   *Index
		n    int
	}{{"train", train, 2}, {"val", val, 1}} {
		os.MkdirAll(filepath.Join(dir, sp.name), 0o755)
		for k, ms := range foreignMembers(t, sp.ix, sp.n) {
			write(filepath.Join(dir, sp.name, "shard-"+strconv.Itoa(k)+".tar"), ms)
		}
	}
	return dir
}

// TestShardsWrittenByOtherTools: shards from Python's tarfile and from
// GNU tar, members in any order, with .json and .txt members and no
// classes.txt, read as the ImageFolder they hold: the same images in the
// same order, the class index naming each class.
func TestShardsWrittenByOtherTools(t *testing.T) {
	_, train, val := smallFolder(t)
	tools := map[string]func(t *testing.T, tarPath string, ms []member){
		"python tarfile": func(t *testing.T, tarPath string, ms []member) {
			const py = "/usr/bin/python3"
			if _, err := os.Stat(py); err != nil {
				t.Skipf("no %s", py)
			}
			stage := t.TempDir()
			var names []string
			for _, m := range ms {
				os.WriteFile(filepath.Join(stage, m.name), m.body, 0o644)
				names = append(names, m.name)
			}
			list, _ := json.Marshal(names)
			script := `import sys, json, tarfile, os
names = json.loads(sys.argv[3])
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as tf:
    for n in names:
        tf.add(os.path.join(sys.argv[2], n), arcname=n)
`
			if out, err := exec.Command(py, "-c", script, tarPath, stage, string(list)).CombinedOutput(); err != nil {
				t.Fatalf("python: %v\n%s", err, out)
			}
		},
		"GNU tar": func(t *testing.T, tarPath string, ms []member) {
			if _, err := exec.LookPath("tar"); err != nil {
				t.Skip("no tar")
			}
			stage := t.TempDir()
			args := []string{"-cf", tarPath, "-C", stage}
			for _, m := range ms {
				os.WriteFile(filepath.Join(stage, m.name), m.body, 0o644)
				args = append(args, "./"+m.name) // GNU tar keeps the ./ it is given
			}
			if out, err := exec.Command("tar", args...).CombinedOutput(); err != nil {
				t.Fatalf("tar: %v\n%s", err, out)
			}
		},
	}
	for name, tool := range tools {
		t.Run(name, func(t *testing.T) {
			dir := writeForeign(t, train, val, func(p string, ms []member) { tool(t, p, ms) })
			st, sv, err := Scan(dir)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"0", "1", "2"}; !slices.Equal(st.Classes, want) {
				t.Errorf("classes %q, want %q (no classes.txt: the index names the class)", st.Classes, want)
			}
			sameSamples(t, "train", st, train)
			sameSamples(t, "val", sv, val)
		})
	}
}

// writeTar writes ms as a tar file with archive/tar.
func writeTar(t *testing.T, file string, ms []member) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range ms {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: m.name, Mode: 0o644, Size: int64(len(m.body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write(m.body)
	}
	tw.Close()
	os.MkdirAll(filepath.Dir(file), 0o755)
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBadShardsNameShardAndMember: each kind of broken shard stops Scan
// with an ErrShard naming the shard and the member.
func TestBadShardsNameShardAndMember(t *testing.T) {
	img, err := os.ReadFile("testdata/rgb.jpg")
	if err != nil {
		t.Fatal(err)
	}
	padded := (len(img) + 511) / 512 * 512 // a.jpg's data; a.cls then takes 1024 bytes, b.jpg's header 512
	good := func(key string, label int) []member {
		return []member{{key + ".jpg", img}, {key + ".cls", []byte(strconv.Itoa(label))}}
	}
	cases := []struct {
		name    string
		members []member
		cut     int    // truncate the tar to this many bytes (0: no)
		classes string // classes.txt, if any
		member  string // the member the error must name
		want    string
	}{
		{name: "no .cls", members: append(good("a", 0), member{"b.jpg", img}), member: "b.jpg", want: "no b.cls member"},
		{name: ".cls not a number", members: append(good("a", 0), member{"b.jpg", img}, member{"b.cls", []byte("cat")}), member: "b.cls", want: "not a class index"},
		{name: ".cls past classes.txt", members: append(good("a", 0), good("b", 3)...), classes: "x\ny\n", member: "b.cls", want: "classes.txt names 2 classes"},
		{name: "negative .cls", members: append(good("a", 0), member{"b.jpg", img}, member{"b.cls", []byte("-1")}), member: "b.cls", want: "not a class index"},
		{name: "path traversal", members: append(good("a", 0), member{"../x.jpg", img}, member{"../x.cls", []byte("0")}), member: "../x.jpg", want: "leaves the folder the shard would be extracted to"},
		{name: "absolute name", members: append(good("a", 0), member{"/etc/x.jpg", img}), member: "/etc/x.jpg", want: "leaves the folder the shard would be extracted to"},
		{name: "two images one key", members: append(good("a", 0), member{"a.png", img}), member: "a.png", want: "two images"},
		{name: "truncated in a member", members: append(good("a", 0), good("b", 1)...), cut: 2048 + padded + 100, member: "b.jpg", want: "truncated"},
		{name: "truncated in a header", members: append(good("a", 0), good("b", 1)...), cut: 1536 + padded + 200, member: "a.cls", want: "truncated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			shard := filepath.Join(dir, "train", "000000.tar")
			writeTar(t, shard, append(tc.members, good("z", 1)...)) // z: past every cut
			writeTar(t, filepath.Join(dir, "val", "000000.tar"), good("v", 0))
			if tc.cut > 0 {
				b, _ := os.ReadFile(shard)
				if tc.cut >= len(b) {
					t.Fatalf("cut at %d of a %d-byte tar", tc.cut, len(b))
				}
				os.WriteFile(shard, b[:tc.cut], 0o644)
			}
			if tc.classes != "" {
				os.WriteFile(filepath.Join(dir, "classes.txt"), []byte(tc.classes), 0o644)
			}
			_, _, err := Scan(dir)
			if err == nil {
				t.Fatal("Scan accepted the shard")
			}
			msg := err.Error()
			if !errors.Is(err, ErrShard) || !strings.Contains(msg, shard) || !strings.Contains(msg, tc.member) || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q: want an ErrShard naming %s, member %q, saying %q", msg, shard, tc.member, tc.want)
			}

			// bad_images: skip: the broken member is left out and listed,
			// the good ones kept.
			train, _, err := ScanWith(dir, ScanOptions{SkipBadShards: true})
			if err != nil {
				t.Fatalf("skipping: %v", err)
			}
			if len(train.SkippedMembers) == 0 || train.SkippedMembers[0] != msg {
				t.Errorf("skipping: listed %q, want first the error %q", train.SkippedMembers, msg)
			}
			var kept []string
			for _, s := range train.Samples {
				kept = append(kept, filepath.Base(s.Path))
			}
			if !slices.Contains(kept, "a.jpg") && !strings.HasPrefix(tc.member, "a.") || slices.Contains(kept, filepath.Base(tc.member)) {
				t.Errorf("skipping: kept %q", kept)
			}
		})
	}
}

// TestUndecodableMemberNamesShardAndMember: an image member that does not
// decode stops the epoch with an *ImageError naming shard/member, or, with
// SkipBadImages, is left out of its batch and listed.
func TestUndecodableMemberNamesShardAndMember(t *testing.T) {
	img, err := os.ReadFile("testdata/rgb.jpg")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	shard := filepath.Join(dir, "train", "000000.tar")
	writeTar(t, shard, []member{{"a.jpg", img}, {"a.cls", []byte("0")}, {"b.jpg", []byte("\xff\xd8not a jpeg")}, {"b.cls", []byte("1")}, {"c.jpg", img}, {"c.cls", []byte("1")}})
	writeTar(t, filepath.Join(dir, "val", "000000.tar"), []member{{"v.jpg", img}, {"v.cls", []byte("0")}})
	train, _, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, skip := range []bool{false, true} {
		l, err := NewLoader(LoaderConfig{Index: train, Transform: testTransform{4}, BatchSize: 3, SkipBadImages: skip})
		if err != nil {
			t.Fatal(err)
		}
		b, err := l.Epoch(context.Background(), 0).Next()
		var ie *ImageError
		switch {
		case !skip && (!errors.As(err, &ie) || ie.Path != shard+"/b.jpg"):
			t.Errorf("bad_images fail: error %v, want an ImageError for %s/b.jpg", err, shard)
		case skip && err != nil:
			t.Errorf("bad_images skip: %v", err)
		case skip && (b.N != 2 || !slices.Equal(b.Skipped, []int{1})):
			t.Errorf("bad_images skip: batch of %d, skipped %v; want 2, and sample 1 skipped", b.N, b.Skipped)
		}
		if !skip {
			t.Logf("%v", err)
		}
		l.Close()
	}
}

// TestShardsBesideClassFoldersAreRefused: a train/ with .tar files and
// class folders is neither layout; Scan says so instead of guessing.
func TestShardsBesideClassFoldersAreRefused(t *testing.T) {
	root, _, _ := smallFolder(t)
	writeTar(t, filepath.Join(root, "train", "000000.tar"), nil)
	_, _, err := Scan(root)
	if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "holds both .tar shards (1) and class folders (3)") {
		t.Errorf("Scan: %v, want an ErrLayout saying train/ holds both", err)
	}
}

// TestShardReadAllocatesNothing: once its shard is open and the decoder's
// buffer grown, reading a member allocates nothing (the loader's hot path).
func TestShardReadAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	_, train, val := smallFolder(t)
	out := filepath.Join(t.TempDir(), "shards")
	if _, err := Pack(context.Background(), train, val, out, DefaultShardBytes); err != nil {
		t.Fatal(err)
	}
	st, _, err := Scan(out)
	if err != nil {
		t.Fatal(err)
	}
	r := NewSampleReader(st)
	defer r.Close()
	var d Decoder
	for i := range st.Samples {
		r.Read(&d, i)
	}
	i := 0
	if n := testing.AllocsPerRun(50, func() {
		if _, err := r.Read(&d, i%len(st.Samples)); err != nil {
			t.Fatal(err)
		}
		i++
	}); n != 0 {
		t.Errorf("%v allocations per member read, want 0", n)
	}
}

// TestScanFormat: data.format folder reads an ImageFolder whose train/
// also holds a .tar (left out, as any file that is no image); shards
// refuses an ImageFolder, saying what it lacks.
func TestScanFormat(t *testing.T) {
	root, train, _ := smallFolder(t)
	writeTar(t, filepath.Join(root, "train", "000000.tar"), nil)
	got, _, err := ScanWith(root, ScanOptions{Format: FormatFolder})
	if err != nil || len(got.Samples) != len(train.Samples) || got.Shards != nil {
		t.Errorf("format folder: %v, want the ImageFolder's %d samples", err, len(train.Samples))
	}
	os.Remove(filepath.Join(root, "train", "000000.tar"))
	if _, _, err := ScanWith(root, ScanOptions{Format: FormatShards}); !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "holds no .tar files") {
		t.Errorf("format shards on an ImageFolder: %v", err)
	}
	if _, _, err := ScanWith(root, ScanOptions{Format: "zip"}); err == nil || !strings.Contains(err.Error(), `unknown dataset format "zip"`) {
		t.Errorf("format zip: %v", err)
	}
}

// TestPackKeepsShardsUnderTheirSize: every shard but one holding a single
// sample is at most the size asked for, for sizes that end anywhere in a
// member's 512-byte blocks.
func TestPackKeepsShardsUnderTheirSize(t *testing.T) {
	_, train, val := smallFolder(t)
	for limit := int64(3 << 10); limit < 5<<10; limit += 128 {
		out := filepath.Join(t.TempDir(), "shards")
		if _, err := Pack(context.Background(), train, val, out, limit); err != nil {
			t.Fatal(err)
		}
		st, _, err := Scan(out)
		if err != nil {
			t.Fatal(err)
		}
		perShard := map[int]int{}
		for _, s := range st.Samples {
			perShard[s.Member.Shard]++
		}
		for k, sh := range st.Shards {
			if sh.Size > limit && perShard[k] > 1 {
				t.Errorf("%s: %d bytes for %d samples, over the %d asked for", sh.Path, sh.Size, perShard[k], limit)
			}
		}
	}
}
