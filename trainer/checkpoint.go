package trainer

import (
	"cmp"
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
//	RUN/latest.json                                   {"checkpoint": "checkpoints/epoch-0003"}
//	RUN/.lock                                         held (flock) by the trainer writing the run
//
// An interrupted run writes RUN/checkpoints/epoch-0003-batch-0017: three
// epochs and 17 batches of the fourth done.
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

// saveCheckpoint writes st as RUN/checkpoints/epoch-NNNN, points latest.json
// at it, and keeps the newest `keep` epoch folders. It returns the folder.
func saveCheckpoint(run string, st checkpointState, keep int) (string, error) {
	name := checkpointName(st.Epoch, st.Partial.Batches)
	parent := filepath.Join(run, "checkpoints")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	tmp, err := mkdirTemp(parent, "."+name+".tmp-")
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	// The class names in the files' own metadata make model.safetensors
	// self-describing without state.json (a JSON list, index = logit).
	classes, _ := json.Marshal(st.Classes)
	meta := map[string]string{"format": "stoke", "epoch": fmt.Sprint(st.Epoch), "classes": string(classes)}
	sums := map[string]string{}
	for _, f := range []struct {
		name    string
		tensors []model.NamedTensor
	}{{weightsFile, st.Params}, {optimFile, st.Optim}} {
		path := filepath.Join(tmp, f.name)
		if err := model.WriteSafetensors(path, f.tensors, meta); err != nil {
			return "", err
		}
		// Hashed as read back: what state.json vouches for is what is on disk.
		if sums[f.name], err = fileSHA256(path); err != nil {
			return "", fmt.Errorf("checkpoint: %w", err)
		}
	}
	cfgText, err := st.Config.Marshal()
	if err != nil {
		return "", err
	}
	shown := make([]string, len(st.Classes))
	raw := make([]string, len(st.Classes))
	for i, c := range st.Classes {
		shown[i] = displayName(c)
		raw[i] = base64.StdEncoding.EncodeToString([]byte(c))
	}
	ds := st.Dataset
	js, err := json.MarshalIndent(stateJSON{
		Format: stateFormat, Epoch: st.Epoch, Step: st.Step, StepsPerEpoch: st.StepsPerEpoch, Partial: st.Partial,
		Classes: shown, ClassBytes: raw, Decoder: st.Decoder, Dataset: &ds, SHA256: sums, Config: string(cfgText),
	}, "", "  ")
	if err != nil {
		return "", err
	}
	if err := writeFileAtomic(filepath.Join(tmp, stateFile), append(js, '\n')); err != nil {
		return "", err
	}
	final := filepath.Join(parent, name)
	if err := os.RemoveAll(final); err != nil { // a leftover of an earlier run of this folder
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	syncDir(parent)
	latest, _ := json.Marshal(map[string]string{"checkpoint": filepath.ToSlash(filepath.Join("checkpoints", name))})
	if err := writeFileAtomic(filepath.Join(run, latestFile), append(latest, '\n')); err != nil {
		return "", err
	}
	pruneCheckpoints(parent, name, keep)
	return final, nil
}

// checkpointName is the folder name of a checkpoint after epochs epochs and
// batches batches of the next.
func checkpointName(epochs, batches int) string {
	name := fmt.Sprintf("epoch-%04d", epochs)
	if batches > 0 {
		name += fmt.Sprintf("-batch-%04d", batches)
	}
	return name
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
		if batches, ok = num(b); !ok || batches == 0 {
			return 0, 0, false
		}
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

// pruneCheckpoints removes all but the newest keep epoch folders, never
// the one just written. Folders are ordered by the epochs and batches
// their names say, not by the names (epoch-10000 is newer than epoch-9999).
func pruneCheckpoints(parent, newest string, keep int) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	type ckpt struct {
		name            string
		epochs, batches int
	}
	var found []ckpt
	for _, e := range entries {
		if ep, b, ok := parseCheckpointName(e.Name()); ok && e.IsDir() {
			found = append(found, ckpt{e.Name(), ep, b})
		}
	}
	slices.SortFunc(found, func(a, b ckpt) int {
		return cmp.Or(cmp.Compare(a.epochs, b.epochs), cmp.Compare(a.batches, b.batches))
	})
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
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
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
	dir := filepath.Join(run, filepath.FromSlash(l.Checkpoint))
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
// recorded.
func loadCheckpointState(path string) (*checkpointState, error) {
	dir := path
	latest, err := readLatest(path)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	if latest != "" {
		dir = latest
	}
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, cerr := os.Stat(filepath.Join(path, "config.yaml")); cerr == nil {
				return nil, fmt.Errorf("resume: run folder %s holds no checkpoint (its run stopped before its first one was written): there is nothing to continue; remove the folder's files, or choose another --out, and start again without --resume", path)
			}
			return nil, fmt.Errorf("resume: %s is neither a run folder (no %s) nor a checkpoint folder (no %s)", path, latestFile, stateFile)
		}
		return nil, fmt.Errorf("resume: %w", err)
	}
	statePath := filepath.Join(dir, stateFile)
	var sj stateJSON
	if err := json.Unmarshal(b, &sj); err != nil {
		return nil, fmt.Errorf("resume: %s is corrupt: %v", statePath, err)
	}
	if sj.Format != 1 && sj.Format != stateFormat {
		return nil, fmt.Errorf("resume: %s: unknown checkpoint format %d", statePath, sj.Format)
	}
	cfg, err := config.Parse([]byte(sj.Config), statePath+" (config)")
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	st := &checkpointState{Dir: dir, Epoch: sj.Epoch, Step: sj.Step, StepsPerEpoch: sj.StepsPerEpoch, Partial: sj.Partial,
		Config: cfg, Classes: sj.Classes, Decoder: sj.Decoder, Unverified: sj.Format == 1}
	if sj.Format >= 2 {
		if len(sj.ClassBytes) != len(sj.Classes) {
			return nil, fmt.Errorf("resume: %s is inconsistent: %d classes but %d in classes_base64", statePath, len(sj.Classes), len(sj.ClassBytes))
		}
		for i, c := range sj.ClassBytes {
			raw, err := base64.StdEncoding.DecodeString(c)
			if err != nil {
				return nil, fmt.Errorf("resume: %s: class %d: %v", statePath, i, err)
			}
			st.Classes[i] = string(raw)
		}
		if sj.Dataset == nil || sj.Decoder == "" {
			return nil, fmt.Errorf("resume: %s is incomplete: no dataset file list or decoder", statePath)
		}
		st.Dataset = *sj.Dataset
	}
	if err := checkCounts(st); err != nil {
		return nil, fmt.Errorf("resume: %s is inconsistent: %v", statePath, err)
	}
	for _, f := range []struct {
		name string
		into *[]model.NamedTensor
	}{{weightsFile, &st.Params}, {optimFile, &st.Optim}} {
		p := filepath.Join(dir, f.name)
		if sj.Format >= 2 {
			want, ok := sj.SHA256[f.name]
			if !ok {
				return nil, fmt.Errorf("resume: %s records no SHA-256 for %s", statePath, f.name)
			}
			got, err := fileSHA256(p)
			if err != nil {
				return nil, fmt.Errorf("resume: %w", err)
			}
			if got != want {
				return nil, fmt.Errorf("resume: %s is not the file the checkpoint wrote: its SHA-256 is %s, state.json recorded %s (changed or damaged since); resume from another checkpoint in %s", p, got, want, filepath.Dir(dir))
			}
		}
		if *f.into, _, err = model.ReadSafetensors(p); err != nil {
			return nil, fmt.Errorf("resume: %w", err)
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

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
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
