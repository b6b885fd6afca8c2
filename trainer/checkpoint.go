package trainer

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"stoke/config"
	"stoke/data"
	"stoke/model"
)

// A run folder's checkpoints:
//
//	RUN/checkpoints/epoch-0003/model.safetensors      weights, PyTorch state_dict names
//	RUN/checkpoints/epoch-0003/optimizer.safetensors  SGD momentum buffers
//	RUN/checkpoints/epoch-0003/state.json             epoch, step, classes, decoder, dataset
//	                                                  file list, the two files' SHA-256, resolved config
//	                                                  and the run's id (run_id)
//	RUN/latest.json                                   {"checkpoint": "checkpoints/epoch-0003"}
//	RUN/run.json                                      {"run_id": "..."}: the run's id, made at its start
//	RUN/.lock                                         held (flock) by the trainer writing the run
//
// An interrupted run writes RUN/checkpoints/epoch-0004-batch-0017: in
// epoch 4, 17 batches done (three epochs complete before it).
//
// Every checkpoint records the id of the run that wrote it; one found in
// another run's folder (copied, or reached through a link) is refused, and
// pruning removes only the run's own. Nothing is read or written through a
// link that leads out of the run folder (checkRunLinks), and only regular
// files are read, never more than they claim (readSmallFile, fileSHA256,
// model.ReadSafetensorsContext), each read stopping when its context ends.
//
// A checkpoint is written into a temporary folder and renamed into place,
// then latest.json is replaced atomically: a crash at any point leaves the
// previous checkpoint whole and latest.json pointing at a complete one.

const (
	weightsFile = "model.safetensors"
	optimFile   = "optimizer.safetensors"
	stateFile   = "state.json"
	latestFile  = "latest.json"
)

// checkpointState is everything needed to resume exactly.
type checkpointState struct {
	Dir           string        // where it was read from
	RunID         string        // the run that wrote it ("" before run ids)
	Epoch         int           // epochs completed
	Step          int           // optimizer steps taken
	StepsPerEpoch int           // training batches an epoch has
	Partial       progressState // of epoch Epoch+1, when interrupted part-way
	Config        config.Config
	Classes       []string      // the class folders' names, byte for byte
	Decoder       string        // the JPEG decoder the run resolved (resolvedDecoder)
	Dataset       data.FileList // the files the run was trained on
	Params        []model.NamedTensor
	Optim         []model.NamedTensor
	// Unverified is set for a checkpoint of format 1, which records no
	// file hashes, decoder or file list.
	Unverified bool
}

// stateJSON is state.json. Format 2 added the tensor files' SHA-256, the
// decoder, the dataset's file list and the class names' bytes.
type stateJSON struct {
	Format        int           `json:"format"`
	RunID         string        `json:"run_id,omitempty"`
	Epoch         int           `json:"epoch"`
	Step          int           `json:"step"`
	StepsPerEpoch int           `json:"steps_per_epoch,omitempty"`
	Partial       progressState `json:"partial_epoch"`
	// Classes shows the names (a name that is not UTF-8 as a Go-quoted
	// string); ClassBytes holds them exactly, base64, and is what is read.
	Classes    []string          `json:"classes"`
	ClassBytes []string          `json:"classes_base64,omitempty"`
	Decoder    string            `json:"decoder,omitempty"`
	Dataset    *data.FileList    `json:"dataset,omitempty"`
	SHA256     map[string]string `json:"sha256,omitempty"` // file name -> hex SHA-256
	Config     string            `json:"config"`           // the resolved config, YAML
}

const stateFormat = 2

// saveFault, set by tests only, is called at each stage of a checkpoint
// write (after model.safetensors, optimizer.safetensors, state.json, the
// rename into place, latest.json); an error
// from it ends the write there, as a crash would (the soak test).
var saveFault func(stage string) error

func faultAt(stage string) error {
	if saveFault == nil {
		return nil
	}
	return saveFault(stage)
}

// saveCheckpoint writes st as RUN/checkpoints/epoch-NNNN, points latest.json
// at it, and keeps the newest `keep` epoch folders. It returns the folder.
func saveCheckpoint(run string, st checkpointState, keep int) (string, error) {
	name := checkpointName(st.Epoch, st.Partial.Batches)
	for _, rel := range []string{"checkpoints", latestFile, runIDFile} {
		if _, err := inRun(run, rel); err != nil {
			return "", fmt.Errorf("checkpoint: %w", err)
		}
	}
	if err := keepRunID(run, st.RunID); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	parent := filepath.Join(run, "checkpoints")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	tmp, err := mkdirTemp(parent, "."+name+".tmp-")
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	sums, err := writeCheckpointTensors(tmp, st)
	if err != nil {
		return "", err
	}
	if err := writeCheckpointState(tmp, st, sums); err != nil {
		return "", err
	}
	final, err := renameCheckpoint(run, tmp, name, st.RunID)
	if err != nil {
		return "", err
	}
	latest, _ := json.Marshal(map[string]string{"checkpoint": filepath.ToSlash(filepath.Join("checkpoints", name))})
	if err := writeFileAtomic(filepath.Join(run, latestFile), append(latest, '\n')); err != nil {
		return "", err
	}
	if err := faultAt(latestFile); err != nil {
		return "", err
	}
	pruneCheckpoints(parent, name, keep, st.RunID)
	return final, nil
}

// writeCheckpointTensors writes st's weights and optimizer state into the
// checkpoint folder tmp as safetensors files and returns their SHA-256
// sums by file name.
func writeCheckpointTensors(tmp string, st checkpointState) (map[string]string, error) {
	// The class names in the files' own metadata make model.safetensors
	// self-describing without state.json (a JSON list, index = logit).
	classes, _ := json.Marshal(st.Classes)
	// precision: the GEMM precision the run trained at (train.precision);
	// the tensors themselves are fp32 at every precision.
	meta := map[string]string{"format": "stoke", "epoch": fmt.Sprint(st.Epoch), "classes": string(classes),
		"precision": st.Config.Train.Precision}
	sums := map[string]string{}
	for _, f := range []struct {
		name    string
		tensors []model.NamedTensor
	}{{weightsFile, st.Params}, {optimFile, st.Optim}} {
		path := filepath.Join(tmp, f.name)
		if err := model.WriteSafetensors(path, f.tensors, meta); err != nil {
			return nil, err
		}
		// Hashed as read back: what state.json vouches for is what is on disk.
		sum, err := fileSHA256(context.Background(), path)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		sums[f.name] = sum
		if err := faultAt(f.name); err != nil {
			return nil, err
		}
	}
	return sums, nil
}

// writeCheckpointState writes state.json into the checkpoint folder tmp:
// st's counters, classes, data set and config, and the sums of the tensor
// files.
func writeCheckpointState(tmp string, st checkpointState, sums map[string]string) error {
	cfgText, err := st.Config.Marshal()
	if err != nil {
		return err
	}
	shown := make([]string, len(st.Classes))
	raw := make([]string, len(st.Classes))
	for i, c := range st.Classes {
		shown[i] = displayName(c)
		raw[i] = base64.StdEncoding.EncodeToString([]byte(c))
	}
	ds := st.Dataset
	js, err := json.MarshalIndent(stateJSON{
		Format: stateFormat, RunID: st.RunID, Epoch: st.Epoch, Step: st.Step, StepsPerEpoch: st.StepsPerEpoch, Partial: st.Partial,
		Classes: shown, ClassBytes: raw, Decoder: st.Decoder, Dataset: &ds, SHA256: sums, Config: string(cfgText),
	}, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(tmp, stateFile), append(js, '\n')); err != nil {
		return err
	}
	return faultAt(stateFile)
}

// renameCheckpoint moves the written folder tmp to RUN/checkpoints/name,
// replacing a leftover of this run (runID) there but never another run's
// checkpoint, and returns the new path.
func renameCheckpoint(run, tmp, name, runID string) (string, error) {
	parent := filepath.Join(run, "checkpoints")
	final := filepath.Join(parent, name)
	if sj, err := readStateJSON(context.Background(), final); err == nil && sj.RunID != "" && sj.RunID != runID {
		return "", fmt.Errorf("checkpoint: %s already holds a checkpoint of another run (run %s; this run is %s), which is not this run's to replace: move it out of the run folder and resume with --resume %s", final, sj.RunID, runID, shellQuote(run))
	}
	if err := os.RemoveAll(final); err != nil { // a leftover of this run (written, then killed before latest.json)
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	syncDir(parent)
	if err := faultAt("rename"); err != nil {
		return "", err
	}
	return final, nil
}

// checkpointName is the folder name of a checkpoint after epochs epochs and
// batches batches of the next: epoch-0003 when epoch 3 is done,
// epoch-0004-batch-0017 part-way through epoch 4 (the epoch it stopped
// in, as the progress line and the interrupt message count it).
func checkpointName(epochs, batches int) string {
	if batches > 0 {
		return fmt.Sprintf("epoch-%04d-batch-%04d", epochs+1, batches)
	}
	return fmt.Sprintf("epoch-%04d", epochs)
}

func validCheckpointName(name string) bool {
	_, _, ok := parseCheckpointName(name)
	return ok
}

// parseCheckpointName is checkpointName's inverse; ok is false for any
// other name.
func parseCheckpointName(name string) (epochs, batches int, ok bool) {
	rest, found := strings.CutPrefix(name, "epoch-")
	if !found {
		return 0, 0, false
	}
	ep, b, hasBatch := strings.Cut(rest, "-batch-")
	num := func(s string) (int, bool) {
		if len(s) < 4 || strings.Trim(s, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	if epochs, ok = num(ep); !ok {
		return 0, 0, false
	}
	if hasBatch {
		if batches, ok = num(b); !ok || batches == 0 || epochs == 0 {
			return 0, 0, false
		}
		epochs-- // named by the epoch it is in
	}
	return epochs, batches, true
}

// mkdirTemp is os.MkdirTemp with the permissions of os.MkdirAll (0755 under
// the usual umask) instead of 0700: a checkpoint folder is renamed into
// place as it is made, and should be as readable as the files in it.
func mkdirTemp(parent, prefix string) (string, error) {
	for try := 0; ; try++ {
		var b [8]byte
		rand.Read(b[:])
		dir := filepath.Join(parent, prefix+hex.EncodeToString(b[:]))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) || try == 100 {
			return "", err
		}
	}
}

// pruneCheckpoints removes all but the newest keep of this run's
// checkpoint folders (those whose state.json records runID), never the one
// just written. A link, a folder of another run, one written before run
// ids or one whose state.json cannot be read is not this run's to delete,
// and is left alone. Folders are ordered by the steps their state.json
// records (epoch-10000 is newer than epoch-9999).
func pruneCheckpoints(parent, newest string, keep int, runID string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	type ckpt struct {
		name string
		step int
	}
	var found []ckpt
	for _, e := range entries {
		if !validCheckpointName(e.Name()) || !e.IsDir() { // IsDir: the entry itself, a link is not one
			continue
		}
		if sj, err := readStateJSON(context.Background(), filepath.Join(parent, e.Name())); err == nil && sj.RunID == runID && runID != "" {
			found = append(found, ckpt{e.Name(), sj.Step})
		}
	}
	slices.SortFunc(found, func(a, b ckpt) int { return cmp.Compare(a.step, b.step) })
	for i := 0; i < len(found)-keep; i++ {
		if found[i].name != newest {
			os.RemoveAll(filepath.Join(parent, found[i].name))
		}
	}
}

// latestCheckpoint reports the checkpoint folder RUN/latest.json names.
func latestCheckpoint(run string) (string, bool) {
	dir, err := readLatest(run)
	return dir, err == nil && dir != ""
}

// readLatest reads RUN/latest.json: the folder it names, "" with no error
// when there is no latest.json, or an error saying what is wrong with it.
func readLatest(run string) (string, error) {
	p := filepath.Join(run, latestFile)
	b, err := readSmallFile(context.Background(), p, maxPointerFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var l struct {
		Checkpoint string `json:"checkpoint"`
	}
	if err := json.Unmarshal(b, &l); err != nil || l.Checkpoint == "" {
		why := "it names no checkpoint"
		if err != nil {
			why = err.Error()
		}
		return "", fmt.Errorf("%s is corrupt (%s); the checkpoints are in %s: resume from one of them with --resume %s", p, why, filepath.Join(run, "checkpoints"), filepath.Join(run, "checkpoints", "epoch-NNNN"))
	}
	if d, name := path.Split(l.Checkpoint); d != "checkpoints/" || !validCheckpointName(name) {
		return "", fmt.Errorf("%s is corrupt (it names %q, not a folder checkpoints/epoch-NNNN); the checkpoints are in %s: resume from one of them with --resume %s", p, l.Checkpoint, filepath.Join(run, "checkpoints"), filepath.Join(run, "checkpoints", "epoch-NNNN"))
	}
	dir, err := inRun(run, filepath.FromSlash(l.Checkpoint))
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s names the checkpoint %s, which does not exist; the checkpoints are in %s: resume from one of them with --resume %s", p, dir, filepath.Join(run, "checkpoints"), filepath.Join(run, "checkpoints", "epoch-NNNN"))
	}
	return dir, nil
}

// runOf is the run folder a --resume path belongs to: the path itself for
// a run folder, RUN for a checkpoint folder RUN/checkpoints/NAME.
func runOf(path string) string {
	if _, err := os.Stat(filepath.Join(path, stateFile)); err == nil {
		if parent := filepath.Dir(filepath.Clean(path)); filepath.Base(parent) == "checkpoints" {
			return filepath.Dir(parent)
		}
	}
	return path
}

// loadCheckpointState reads a checkpoint from a run folder (its latest) or
// from a checkpoint folder itself, and checks that it is whole: its counts
// in range and consistent, each tensor file's SHA-256 the one state.json
// recorded, its run the run folder's. A damaged latest checkpoint is named
// as such, with the run's intact ones. It stops when ctx is cancelled, with
// an error that wraps ctx.Err().
func loadCheckpointState(ctx context.Context, path string) (*checkpointState, error) {
	run := runOf(path)
	if err := checkRunLinks(run); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	dir := path
	latest, err := readLatest(path)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	if latest != "" {
		dir = latest
	}
	if _, err := os.Stat(filepath.Join(dir, stateFile)); latest == "" && errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("resume: %w", noCheckpointError(ctx, path))
	}
	st, err := readCheckpoint(ctx, dir)
	if err != nil {
		if latest != "" && ctx.Err() == nil {
			return nil, fmt.Errorf("resume: the latest checkpoint %s (named by %s) is damaged: %w; %s", dir, filepath.Join(path, latestFile), err, intactCheckpoints(ctx, path, filepath.Base(dir)))
		}
		return nil, fmt.Errorf("resume: %w", err)
	}
	if id, err := readRunID(run); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	} else if id != "" && st.RunID != "" && id != st.RunID {
		return nil, fmt.Errorf("resume: the checkpoint %s belongs to run %s, but the run folder %s is run %s (see its %s): it was copied or linked in from another run; resume the run it belongs to, or copy the checkpoint folder out of %s and resume from the copy with a new --out", dir, st.RunID, run, id, runIDFile, run)
	}
	return st, nil
}

// noCheckpointError says why path, which has no latest.json and is no
// checkpoint folder, cannot be resumed, and what can be.
func noCheckpointError(ctx context.Context, path string) error {
	if _, err := os.Stat(filepath.Join(path, "config.yaml")); err != nil {
		return fmt.Errorf("%s is neither a run folder (no %s) nor a checkpoint folder (no %s)", path, latestFile, stateFile)
	}
	if names := checkpointFolders(path); len(names) > 0 {
		return fmt.Errorf("run folder %s has no %s (removed?), but its checkpoints folder holds %s; %s", path, latestFile, strings.Join(names, ", "), intactCheckpoints(ctx, path, ""))
	}
	return fmt.Errorf("run folder %s holds no checkpoint (its run stopped before its first one was written): there is nothing to continue; start again without --resume (a fresh run into that folder needs its config.yaml and metrics.jsonl removed first), or choose another --out", path)
}

// checkpointFolders lists the checkpoint folders under RUN/checkpoints, the
// newest (by name) first.
func checkpointFolders(run string) []string {
	entries, _ := os.ReadDir(filepath.Join(run, "checkpoints"))
	type named struct {
		name            string
		epochs, batches int
	}
	var found []named
	for _, e := range entries {
		if ep, b, ok := parseCheckpointName(e.Name()); ok && e.IsDir() {
			found = append(found, named{e.Name(), ep, b})
		}
	}
	slices.SortFunc(found, func(a, b named) int {
		return cmp.Or(cmp.Compare(b.epochs, a.epochs), cmp.Compare(b.batches, a.batches))
	})
	names := make([]string, len(found))
	for i, f := range found {
		names[i] = f.name
	}
	return names
}

// intactCheckpoints names the run's checkpoints, other than skip, that read
// back whole, and says how to resume from the newest.
func intactCheckpoints(ctx context.Context, run, skip string) string {
	var intact []string
	for _, name := range checkpointFolders(run) {
		if name == skip {
			continue
		}
		if _, err := readCheckpoint(ctx, filepath.Join(run, "checkpoints", name)); err == nil {
			intact = append(intact, name)
		}
	}
	if len(intact) == 0 {
		return fmt.Sprintf("no other checkpoint in %s reads back whole", filepath.Join(run, "checkpoints"))
	}
	return fmt.Sprintf("intact: %s; continue from the newest with --resume %s", strings.Join(intact, ", "), shellQuote(filepath.Join(run, "checkpoints", intact[0])))
}

// Bounds on what is read of the small files: a state.json records a
// config and a few counts, a pointer file one path.
const (
	maxStateFile   = 16 << 20
	maxPointerFile = 64 << 10
)

// readStateJSON reads and parses DIR/state.json.
func readStateJSON(ctx context.Context, dir string) (stateJSON, error) {
	statePath := filepath.Join(dir, stateFile)
	var sj stateJSON
	b, err := readSmallFile(ctx, statePath, maxStateFile)
	if err != nil {
		return sj, err
	}
	if err := json.Unmarshal(b, &sj); err != nil {
		return sj, fmt.Errorf("%s is corrupt: %v", statePath, err)
	}
	return sj, nil
}

// readCheckpoint reads and checks the checkpoint folder dir.
func readCheckpoint(ctx context.Context, dir string) (*checkpointState, error) {
	statePath := filepath.Join(dir, stateFile)
	sj, err := readStateJSON(ctx, dir)
	if err != nil {
		return nil, err
	}
	if sj.Format != 1 && sj.Format != stateFormat {
		return nil, fmt.Errorf("%s: unknown checkpoint format %d", statePath, sj.Format)
	}
	cfg, err := config.Parse([]byte(sj.Config), statePath+" (config)")
	if err != nil {
		return nil, err
	}
	st := &checkpointState{Dir: dir, RunID: sj.RunID, Epoch: sj.Epoch, Step: sj.Step, StepsPerEpoch: sj.StepsPerEpoch, Partial: sj.Partial,
		Config: cfg, Classes: sj.Classes, Decoder: sj.Decoder, Unverified: sj.Format == 1}
	if sj.Format >= 2 {
		if len(sj.ClassBytes) != len(sj.Classes) {
			return nil, fmt.Errorf("%s is inconsistent: %d classes but %d in classes_base64", statePath, len(sj.Classes), len(sj.ClassBytes))
		}
		for i, c := range sj.ClassBytes {
			raw, err := base64.StdEncoding.DecodeString(c)
			if err != nil {
				return nil, fmt.Errorf("%s: class %d: %v", statePath, i, err)
			}
			st.Classes[i] = string(raw)
		}
		if sj.Dataset == nil || sj.Decoder == "" {
			return nil, fmt.Errorf("%s is incomplete: no dataset file list or decoder", statePath)
		}
		st.Dataset = *sj.Dataset
	}
	if err := checkCounts(st); err != nil {
		return nil, fmt.Errorf("%s is inconsistent: %v", statePath, err)
	}
	for _, f := range []struct {
		name string
		into *[]model.NamedTensor
	}{{weightsFile, &st.Params}, {optimFile, &st.Optim}} {
		p := filepath.Join(dir, f.name)
		if sj.Format >= 2 {
			want, ok := sj.SHA256[f.name]
			if !ok {
				return nil, fmt.Errorf("%s records no SHA-256 for %s", statePath, f.name)
			}
			got, err := fileSHA256(ctx, p)
			if err != nil {
				return nil, err
			}
			if got != want {
				return nil, fmt.Errorf("%s is not the file the checkpoint wrote: its SHA-256 is %s, state.json recorded %s (changed or damaged since); resume from another checkpoint in %s", p, got, want, filepath.Dir(dir))
			}
		}
		if *f.into, _, err = model.ReadSafetensorsContext(ctx, p); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// checkCounts checks a checkpoint's counts: each in range, and consistent
// with each other and with its config.
func checkCounts(st *checkpointState) error {
	p, c := st.Partial, st.Config
	switch {
	case st.Epoch < 0 || st.Step < 0 || p.Batches < 0 || p.Images < 0 || p.Correct < 0:
		return fmt.Errorf("negative counts (epoch %d, step %d, batches %d, images %d, correct %d)", st.Epoch, st.Step, p.Batches, p.Images, p.Correct)
	case math.IsNaN(p.LossSum) || math.IsInf(p.LossSum, 0) || p.LossSum < 0:
		return fmt.Errorf("the partial epoch's loss sum is %v", p.LossSum)
	case st.Epoch > c.Train.Epochs || (st.Epoch == c.Train.Epochs && p.Batches > 0):
		return fmt.Errorf("%d epochs and %d batches done, but its config has train.epochs %d", st.Epoch, p.Batches, c.Train.Epochs)
	case p.Correct > p.Images || p.Images > p.Batches*c.Data.BatchSize:
		return fmt.Errorf("the partial epoch has %d batches of at most %d images, %d images and %d right", p.Batches, c.Data.BatchSize, p.Images, p.Correct)
	}
	if st.Unverified {
		return nil
	}
	switch {
	case st.StepsPerEpoch < 1 || p.Batches > st.StepsPerEpoch:
		return fmt.Errorf("%d batches of an epoch of %d done", p.Batches, st.StepsPerEpoch)
	case st.Step != st.Epoch*st.StepsPerEpoch+p.Batches:
		return fmt.Errorf("step %d, but %d epochs of %d steps and %d batches make %d", st.Step, st.Epoch, st.StepsPerEpoch, p.Batches, st.Epoch*st.StepsPerEpoch+p.Batches)
	case st.Dataset.Train < 1 || st.Dataset.Val < 0:
		return fmt.Errorf("a dataset of %d training images", st.Dataset.Train)
	}
	return nil
}

// compatible reports every setting that differs between the checkpoint's
// config and now, among those a resume may not change.
func compatible(st *checkpointState, now config.Config) error {
	bad := config.ResumeMismatches(st.Config, now, "now")
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("cannot resume from %s: %d settings differ from the run's (see its config.yaml):\n  %s\na resume may change only %s; or start a new run with another --out",
		st.Dir, len(bad), strings.Join(bad, "\n  "), strings.Join(config.ResumeChangeableList(), ", "))
}

// displayName shows a class name as it is when it is UTF-8, else Go-quoted
// ("caf\xe9").
func displayName(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strconv.Quote(s)
}

// openRegular opens path for reading when it is a regular file: a device
// (a link to /dev/zero), a FIFO or a socket is refused before it is opened,
// so that no read runs forever and no open waits for a writer.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file (%v): a checkpoint is read from files only", path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		f.Close()
		return nil, nil, fmt.Errorf("%s changed while it was opened", path)
	}
	return f, fi, nil
}

// readChunk is how much is read between two looks at the context.
const readChunk = 1 << 20

// readSmallFile reads path, a regular file of at most limit bytes.
func readSmallFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than such a file can be (%d)", path, fi.Size(), limit)
	}
	var buf bytes.Buffer
	if _, err := copyContext(ctx, &buf, io.LimitReader(f, limit+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("%s grew past %d bytes while it was read", path, limit)
	}
	return buf.Bytes(), nil
}

// copyContext is io.Copy in chunks of readChunk, stopping when ctx ends.
func copyContext(ctx context.Context, dst io.Writer, src io.Reader) (int64, error) {
	buf := make([]byte, readChunk)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		k, err := src.Read(buf)
		if k > 0 {
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// fileSHA256 hashes path, a regular file, read up to the size it had when
// opened.
func fileSHA256(ctx context.Context, path string) (string, error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := copyContext(ctx, h, io.LimitReader(f, fi.Size())); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeFileAtomic writes b to path through a temporary file in the same
// folder, synced and renamed into place: readers see the old file or the new
// one, never a part.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
