package trainer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"stoke/config"
	"stoke/data"
)

// copyDataset copies the tiny dataset to a folder of the test's own.
func copyDataset(t *testing.T) string {
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

// editState rewrites one field of the latest checkpoint's state.json.
func editState(t *testing.T, run, key string, value any) {
	t.Helper()
	dir, ok := latestCheckpoint(run)
	if !ok {
		t.Fatalf("no checkpoint in %s", run)
	}
	path := filepath.Join(dir, stateFile)
	var m map[string]any
	if err := json.Unmarshal([]byte(readFile(t, path)), &m); err != nil {
		t.Fatal(err)
	}
	m[key] = value
	b, _ := json.Marshal(m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func runOK(t *testing.T, c config.Config) *Summary {
	t.Helper()
	var out bytes.Buffer
	sum, err := Run(context.Background(), c, Options{Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return sum
}

func TestResumeListsEveryMismatchAtOnce(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	runOK(t, c)
	c.Train.Resume = c.Train.Out
	c.Train.Epochs = 2
	c.Optim.LR = 0.2
	c.Data.BatchSize = 4
	c.Train.Seed = 5
	c.Data.Workers = 0 // may change
	_, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)})
	if err == nil {
		t.Fatal("resume with three changed settings: no error")
	}
	for _, want := range []string{"data.batch_size is 8 in the run but 4 now", "optim.lr is 0.05 in the run but 0.2 now", "train.seed is 1 in the run but 5 now"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "data.workers is") || strings.Contains(err.Error(), "train.epochs is") {
		t.Errorf("error lists a setting a resume may change:\n%v", err)
	}
}

func TestResumeSaysOnceThatEpochsChanged(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	runOK(t, c)
	c.Train.Resume, c.Train.Epochs = c.Train.Out, 2
	var out bytes.Buffer
	if _, err := Run(context.Background(), c, Options{Out: &out}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "train.epochs changed from 1 to 2"); n != 1 {
		t.Errorf("the epochs change is said %d times:\n%s", n, out.String())
	}
}

func TestResumeRefusesAnotherDecoder(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	runOK(t, c)
	other := "image/jpeg"
	if resolvedDecoder(c.Data.Decoder) == other {
		other = "libjpeg-turbo"
	}
	editState(t, c.Train.Out, "decoder", other)
	c.Train.Resume, c.Train.Epochs = c.Train.Out, 2
	_, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)})
	if err == nil || !strings.Contains(err.Error(), "decoded JPEGs with "+other) || !strings.Contains(err.Error(), resolvedDecoder(c.Data.Decoder)) {
		t.Errorf("resume under another decoder: error %v, want one naming both decoders", err)
	}
}

func TestResumeRefusesAChangedDataset(t *testing.T) {
	for _, change := range []string{"added", "resized"} {
		c := tinyConfig(t)
		c.Data.Root = copyDataset(t)
		c.Train.Epochs = 1
		runOK(t, c)
		victim := filepath.Join(c.Data.Root, "val", "00_red_circle", "extra.jpg")
		if change == "resized" {
			matches, _ := filepath.Glob(filepath.Join(c.Data.Root, "train", "*", "*.jpg"))
			victim = matches[0]
		}
		src, _ := filepath.Glob(filepath.Join(c.Data.Root, "train", "*", "*.jpg"))
		b := []byte(readFile(t, src[1]))
		if err := os.WriteFile(victim, append(b, 0), 0o644); err != nil { // a trailing byte still decodes
			t.Fatal(err)
		}
		c.Train.Resume, c.Train.Epochs = c.Train.Out, 2
		_, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)})
		if err == nil || !strings.Contains(err.Error(), "not the one it was trained on") {
			t.Errorf("%s: resume on a changed dataset: error %v", change, err)
		}
		if change == "added" && (err == nil || !strings.Contains(err.Error(), "30 train / 12 val images then, 30 / 13 now")) {
			t.Errorf("added: error %v does not give the counts", err)
		}
	}
	// The same files elsewhere are the same dataset (data.root may change).
	c := tinyConfig(t)
	c.Train.Epochs = 1
	runOK(t, c)
	c.Data.Root = copyDataset(t)
	c.Train.Resume, c.Train.Epochs = c.Train.Out, 2
	runOK(t, c)
}

// snapshot is every file under dir: path -> mode, size, mtime, SHA-256.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := d.Info()
		sum := ""
		if !d.IsDir() {
			h := sha256.Sum256([]byte(readFile(t, p)))
			sum = hex.EncodeToString(h[:])
		}
		out[p] = fmt.Sprintf("%v %d %v %s", fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), sum)
		return nil
	})
	return out
}

func TestNoOpResumeChangesNothing(t *testing.T) {
	c := tinyConfig(t)
	runOK(t, c)
	before := snapshot(t, c.Train.Out)
	for _, epochs := range []int{1, 2} {
		c.Train.Resume, c.Train.Epochs = c.Train.Out, epochs
		var out bytes.Buffer
		sum, err := Run(context.Background(), c, Options{Out: &out})
		if err != nil {
			t.Fatal(err)
		}
		if sum.CheckpointEpochs != 2 || len(sum.Epochs) != 0 || !strings.Contains(out.String(), "has 2 epochs done") || !strings.Contains(out.String(), "nothing was changed") {
			t.Errorf("--epochs %d: summary %+v, output:\n%s", epochs, sum, out.String())
		}
		if after := snapshot(t, c.Train.Out); !mapsEqual(before, after) {
			t.Errorf("--epochs %d changed the run folder:\nbefore %v\nafter  %v", epochs, before, after)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestResumedEpochFiguresAreThisInvocations: the epoch resumed part-way
// reports img/s over the images trained after the resume, and time shares
// of the time spent on them (not on skipping the batches done before).
func TestResumedEpochFiguresAreThisInvocations(t *testing.T) {
	c := tinyConfig(t)
	c.Data.BatchSize = 4 // 30 images: 8 steps, the last of 2 images
	c.Data.Workers = 0   // skipped batches are loaded inline: slow, and not this epoch's work
	c.Train.Epochs = 1
	interruptAfter(t, "4-image batches", c, Options{}, 5)
	c.Train.Resume = c.Train.Out
	sum := runOK(t, c)
	m := sum.Epochs[0]
	if images := m.ImgPerSec * m.TrainSeconds; math.Abs(images-10) > 1e-6 {
		t.Errorf("img/s %.1f over %.4fs = %.2f images; this invocation trained 10", m.ImgPerSec, m.TrainSeconds, images)
	}
	// Counting the skip would put the 5 batches loaded inline beside these
	// 2 trained ones (a share near 2/7, or past 1); the loop's own
	// bookkeeping between steps is the rest, which on an epoch of a few
	// milliseconds on a busy machine was measured at 11% (so not 0.9).
	if share := m.WaitShare + m.CopyShare + m.ComputeShare; share < 0.75 || share > 1.0001 {
		t.Errorf("wait %.2f + copy %.2f + compute %.2f = %.2f of the epoch's training time", m.WaitShare, m.CopyShare, m.ComputeShare, share)
	}
	t.Logf("resumed epoch: %.0f img/s, wait %.3f copy %.3f compute %.3f of %.4fs", m.ImgPerSec, m.WaitShare, m.CopyShare, m.ComputeShare, m.TrainSeconds)
}

// TestCheckpointIsVerifiedOnLoad: a damaged file, inconsistent counts and a
// bad latest.json are each refused, saying what is wrong.
func TestCheckpointIsVerifiedOnLoad(t *testing.T) {
	c := tinyConfig(t)
	runOK(t, c)
	dir, _ := latestCheckpoint(c.Train.Out)
	pristine := map[string][]byte{}
	for _, f := range []string{weightsFile, optimFile, stateFile} {
		pristine[f] = []byte(readFile(t, filepath.Join(dir, f)))
	}
	pristine[latestFile] = []byte(readFile(t, filepath.Join(c.Train.Out, latestFile)))
	restore := func() {
		for f, b := range pristine {
			p := filepath.Join(dir, f)
			if f == latestFile {
				p = filepath.Join(c.Train.Out, f)
			}
			os.WriteFile(p, b, 0o644)
		}
	}
	if _, err := loadCheckpointState(context.Background(), c.Train.Out); err != nil {
		t.Fatalf("the checkpoint as written: %v", err)
	}
	flip := func(name string) func() {
		return func() {
			b := slices.Clone(pristine[name])
			b[len(b)-3] ^= 0x10 // a tensor's byte: the file still parses
			os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
	}
	for _, tc := range []struct {
		name   string
		damage func()
		want   string
	}{
		{"weights byte", flip(weightsFile), weightsFile + " is not the file the checkpoint wrote"},
		{"optimizer byte", flip(optimFile), optimFile + " is not the file the checkpoint wrote"},
		{"step", func() { editState(t, c.Train.Out, "step", 9) }, "step 9, but 2 epochs of 4 steps and 0 batches make 8"},
		{"epoch", func() { editState(t, c.Train.Out, "epoch", 7) }, "7 epochs and 0 batches done, but its config has train.epochs 2"},
		{"negative", func() { editState(t, c.Train.Out, "step", -1) }, "negative counts"},
		{"partial", func() {
			editState(t, c.Train.Out, "epoch", 1)
			editState(t, c.Train.Out, "step", 5)
			editState(t, c.Train.Out, "partial_epoch", map[string]any{"batches": 1, "images": 9, "correct": 0, "loss_sum": 1})
		}, "the partial epoch has 1 batches of at most 8 images, 9 images"},
		{"state.json", func() { os.WriteFile(filepath.Join(dir, stateFile), []byte("{"), 0o644) }, stateFile + " is corrupt"},
		{"latest.json corrupt", func() { os.WriteFile(filepath.Join(c.Train.Out, latestFile), []byte("{\"checkp"), 0o644) }, latestFile + " is corrupt"},
		{"latest.json missing folder", func() {
			os.WriteFile(filepath.Join(c.Train.Out, latestFile), []byte(`{"checkpoint": "checkpoints/epoch-0009"}`), 0o644)
		}, "epoch-0009, which does not exist"},
		{"latest.json outside", func() {
			os.WriteFile(filepath.Join(c.Train.Out, latestFile), []byte(`{"checkpoint": "../../elsewhere"}`), 0o644)
		}, `latest.json is corrupt (it names "../../elsewhere"`},
	} {
		restore()
		tc.damage()
		_, err := loadCheckpointState(context.Background(), c.Train.Out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	restore()
	// Resuming from a damaged checkpoint is refused before anything is written.
	flip(weightsFile)()
	before := snapshot(t, c.Train.Out)
	c.Train.Resume, c.Train.Epochs = c.Train.Out, 3
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err == nil || !strings.Contains(err.Error(), weightsFile) {
		t.Errorf("resume from a damaged checkpoint: %v", err)
	}
	if after := snapshot(t, c.Train.Out); !mapsEqual(before, after) {
		t.Error("a refused resume changed the run folder")
	}
}

// TestClassNamesOfAnyBytesResume: a class folder whose name is not UTF-8
// trains and resumes, and state.json keeps the name's bytes.
func TestClassNamesOfAnyBytesResume(t *testing.T) {
	c := tinyConfig(t)
	c.Data.Root = copyDataset(t)
	for _, split := range []string{"train", "val"} {
		if err := os.Rename(filepath.Join(c.Data.Root, split, "00_red_circle"), filepath.Join(c.Data.Root, split, "caf\xe9")); err != nil {
			t.Fatal(err)
		}
	}
	c.Train.Epochs = 1
	runOK(t, c)
	st, err := loadCheckpointState(context.Background(), c.Train.Out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(st.Classes, "caf\xe9") {
		t.Errorf("classes read back as %q", st.Classes)
	}
	c.Train.Resume, c.Train.Epochs = c.Train.Out, 2
	runOK(t, c)
	// Another name, even one shown alike (U+FFFD), is another class.
	for _, split := range []string{"train", "val"} {
		os.Rename(filepath.Join(c.Data.Root, split, "caf\xe9"), filepath.Join(c.Data.Root, split, "caf\uFFFD"))
	}
	c.Train.Epochs = 3
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err == nil || !strings.Contains(err.Error(), "classes") {
		t.Errorf("resume with a class renamed: %v", err)
	}
}

func TestSecondTrainerOnAFolderStopsNamingTheFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	first, err := claimRunFolder(dir, false, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	defer first.release()
	if !lockSupported {
		t.Skip("no flock on this system")
	}
	_, err = claimRunFolder(dir, true, new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("PID %d", os.Getpid())) {
		t.Errorf("second claim: error %v, want one naming PID %d", err, os.Getpid())
	}
	first.release()
	again, err := claimRunFolder(dir, true, new(bytes.Buffer))
	if err != nil {
		t.Fatalf("after the first released it: %v", err)
	}
	again.release()
}

// TestFreshRunStoppedBeforeItsFirstCheckpointCanRunAgain: a fresh run that
// ends before any checkpoint leaves no run files, so the same command runs.
func TestFreshRunStoppedBeforeItsFirstCheckpointCanRunAgain(t *testing.T) {
	c := tinyConfig(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, c, Options{Out: new(bytes.Buffer)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	if found := runFilesIn(c.Train.Out); len(found) > 0 {
		t.Errorf("the run stopped before its first checkpoint left %v", found)
	}
	runOK(t, c)
}

func TestFreshRunRefusesAFolderHoldingAnyRunsFiles(t *testing.T) {
	for _, name := range []string{"config.yaml", "metrics.jsonl", "latest.json", "checkpoints/"} {
		c := tinyConfig(t)
		os.MkdirAll(c.Train.Out, 0o755)
		p := filepath.Join(c.Train.Out, name)
		if strings.HasSuffix(name, "/") {
			os.Mkdir(p, 0o755)
		} else {
			os.WriteFile(p, []byte("not even valid\n"), 0o644)
		}
		before := snapshot(t, c.Train.Out)
		_, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)})
		if err == nil || !strings.Contains(err.Error(), "already holds a run") || !strings.Contains(err.Error(), "("+name+")") {
			t.Errorf("a folder holding %s: error %v", name, err)
		}
		if after := snapshot(t, c.Train.Out); !mapsEqual(before, after) {
			t.Errorf("a folder holding %s was changed:\n%v\n%v", name, before, after)
		}
	}
}

func TestResumeIntoAnotherRunsFolderIsRefused(t *testing.T) {
	a, b := tinyConfig(t), tinyConfig(t)
	a.Train.Epochs, b.Train.Epochs = 1, 1
	runOK(t, a)
	runOK(t, b)
	before := snapshot(t, a.Train.Out)
	c := b
	c.Train.Resume, c.Train.Out, c.Train.Epochs = b.Train.Out, a.Train.Out, 2
	_, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)})
	if err == nil || !strings.Contains(err.Error(), "holds another run") {
		t.Errorf("resume B --out A: error %v", err)
	}
	if !mapsEqual(before, snapshot(t, a.Train.Out)) {
		t.Error("the refused resume changed A")
	}
	// Into an empty folder, B continues there.
	c.Train.Out = filepath.Join(t.TempDir(), "fork")
	runOK(t, c)
	if dir, _ := latestCheckpoint(c.Train.Out); filepath.Base(dir) != "epoch-0002" {
		t.Errorf("the fork's latest checkpoint is %q", dir)
	}
	if m := metricsLines(t, c.Train.Out); len(m) != 2 || m[0].Epoch != 1 || m[1].Epoch != 2 {
		t.Errorf("the fork's metrics.jsonl holds %d epochs, want the run's 2", len(m))
	}
}

func TestLeftoversOfKilledWritesAreRemoved(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	runOK(t, c)
	leftovers := []string{
		filepath.Join(c.Train.Out, "checkpoints", ".epoch-0002.tmp-1234"),
		filepath.Join(c.Train.Out, "checkpoints", ".epoch-0001-batch-0002.tmp-77"),
		filepath.Join(c.Train.Out, ".latest.json.tmp-5678"),
		filepath.Join(c.Train.Out, ".metrics.jsonl.tmp-9"),
	}
	for _, p := range leftovers {
		if strings.Contains(p, ".epoch-") {
			os.MkdirAll(p, 0o755)
			os.WriteFile(filepath.Join(p, weightsFile), []byte("half"), 0o644)
		} else {
			os.WriteFile(p, []byte("half"), 0o644)
		}
	}
	keep := filepath.Join(c.Train.Out, "notes.tmp-mine") // not ours: no leading dot
	os.WriteFile(keep, nil, 0o644)
	c.Train.Resume, c.Train.Epochs = c.Train.Out, 2
	runOK(t, c)
	for _, p := range leftovers {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("a file of the user's was removed: %v", err)
	}
}

func TestPruningOrdersEpochsByNumber(t *testing.T) {
	run := t.TempDir()
	parent := filepath.Join(run, "checkpoints")
	c := tinyConfig(t)
	for _, at := range []struct{ epoch, batches int }{{9998, 0}, {9999, 0}, {9999, 3}, {10000, 0}, {10001, 0}} {
		st := checkpointState{RunID: "r", Epoch: at.epoch, Step: 10*at.epoch + at.batches, Partial: progressState{Batches: at.batches}, Config: c}
		if _, err := saveCheckpoint(run, st, 2); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(parent)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"epoch-10000", "epoch-10001"}; !slices.Equal(names, want) {
		t.Errorf("kept %v, want %v", names, want)
	}
}

func TestCheckpointFoldersAreReadableByOthers(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	runOK(t, c)
	ref := filepath.Join(t.TempDir(), "ref")
	os.Mkdir(ref, 0o755) // what the umask makes of 0755
	want, _ := os.Stat(ref)
	dir, _ := latestCheckpoint(c.Train.Out)
	got, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode().Perm() != want.Mode().Perm() {
		t.Errorf("checkpoint folder mode %v, want %v (as os.Mkdir 0755 makes)", got.Mode().Perm(), want.Mode().Perm())
	}
}

var _ = data.ListFiles
