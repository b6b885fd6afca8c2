package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"stoke/config"
	"stoke/model"
)

// A run folder's checkpoints:
//
//	RUN/checkpoints/epoch-0003/model.safetensors      weights, PyTorch state_dict names
//	RUN/checkpoints/epoch-0003/optimizer.safetensors  SGD momentum buffers
//	RUN/checkpoints/epoch-0003/state.json             epoch, step, classes, resolved config
//	RUN/latest.json                                   {"checkpoint": "checkpoints/epoch-0003"}
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
	Dir     string        // where it was read from
	Epoch   int           // epochs completed
	Step    int           // optimizer steps taken
	Partial progressState // of epoch Epoch+1, when interrupted part-way
	Config  config.Config
	Classes []string
	Params  []model.NamedTensor
	Optim   []model.NamedTensor
}

type stateJSON struct {
	Format  int           `json:"format"`
	Epoch   int           `json:"epoch"`
	Step    int           `json:"step"`
	Partial progressState `json:"partial_epoch"`
	Classes []string      `json:"classes"`
	Config  string        `json:"config"` // the resolved config, YAML
}

// saveCheckpoint writes st as RUN/checkpoints/epoch-NNNN, points latest.json
// at it, and keeps the newest `keep` epoch folders. It returns the folder.
func saveCheckpoint(run string, st checkpointState, keep int) (string, error) {
	name := fmt.Sprintf("epoch-%04d", st.Epoch)
	if st.Partial.Batches > 0 {
		name += fmt.Sprintf("-batch-%04d", st.Partial.Batches)
	}
	parent := filepath.Join(run, "checkpoints")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+name+".tmp-")
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	meta := map[string]string{"format": "stoke", "epoch": fmt.Sprint(st.Epoch)}
	if err := model.WriteSafetensors(filepath.Join(tmp, weightsFile), st.Params, meta); err != nil {
		return "", err
	}
	if err := model.WriteSafetensors(filepath.Join(tmp, optimFile), st.Optim, meta); err != nil {
		return "", err
	}
	cfgText, err := st.Config.Marshal()
	if err != nil {
		return "", err
	}
	js, err := json.MarshalIndent(stateJSON{Format: 1, Epoch: st.Epoch, Step: st.Step, Partial: st.Partial, Classes: st.Classes, Config: string(cfgText)}, "", "  ")
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
	latest, _ := json.Marshal(map[string]string{"checkpoint": filepath.Join("checkpoints", name)})
	if err := writeFileAtomic(filepath.Join(run, latestFile), append(latest, '\n')); err != nil {
		return "", err
	}
	pruneCheckpoints(parent, name, keep)
	return final, nil
}

// pruneCheckpoints removes all but the newest keep epoch folders, never
// the one just written.
func pruneCheckpoints(parent, newest string, keep int) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "epoch-") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for i := 0; i < len(names)-keep; i++ {
		if names[i] != newest {
			os.RemoveAll(filepath.Join(parent, names[i]))
		}
	}
}

// latestCheckpoint reports the checkpoint folder RUN/latest.json names.
func latestCheckpoint(run string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(run, latestFile))
	if err != nil {
		return "", false
	}
	var l struct {
		Checkpoint string `json:"checkpoint"`
	}
	if json.Unmarshal(b, &l) != nil || l.Checkpoint == "" {
		return "", false
	}
	return filepath.Join(run, l.Checkpoint), true
}

// loadCheckpointState reads a checkpoint from a run folder (its latest) or
// from a checkpoint folder itself.
func loadCheckpointState(path string) (*checkpointState, error) {
	dir := path
	if d, ok := latestCheckpoint(path); ok {
		dir = d
	}
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("resume: %s is neither a run folder (no %s) nor a checkpoint folder (no %s)", path, latestFile, stateFile)
		}
		return nil, fmt.Errorf("resume: %w", err)
	}
	var sj stateJSON
	if err := json.Unmarshal(b, &sj); err != nil {
		return nil, fmt.Errorf("resume: %s: %v", filepath.Join(dir, stateFile), err)
	}
	if sj.Format != 1 {
		return nil, fmt.Errorf("resume: %s: unknown checkpoint format %d", filepath.Join(dir, stateFile), sj.Format)
	}
	cfg, err := config.Parse([]byte(sj.Config), filepath.Join(dir, stateFile)+" (config)")
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	st := &checkpointState{Dir: dir, Epoch: sj.Epoch, Step: sj.Step, Partial: sj.Partial, Config: cfg, Classes: sj.Classes}
	if st.Params, _, err = model.ReadSafetensors(filepath.Join(dir, weightsFile)); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	if st.Optim, _, err = model.ReadSafetensors(filepath.Join(dir, optimFile)); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	return st, nil
}

// resumeFree lists the settings a resumed run may change: where and how fast
// it runs, and for how long. Every other setting shapes the numbers and must
// match the checkpoint for the run to continue exactly.
var resumeFree = map[string]bool{
	"data.root": true, "data.workers": true, "data.prefetch": true, "data.pin_memory": true,
	"data.cache_dir": true, "data.bad_images": true, "data.max_pixels": true,
	"train.epochs": true, "train.device": true, "train.non_blocking": true, "train.out": true,
	"train.resume": true, "train.threads": true, "train.progress": true, "train.keep_checkpoints": true, "train.trace": true,
	"train.dist": true, "train.dist_timeout": true, "train.dist_bucket_mb": true, // data.batch_size x ranks is compared instead (dist.go)
}

// compatible reports the first setting that differs between the
// checkpoint's config and now, among those that must match.
func compatible(saved, now config.Config, out io.Writer) error {
	sf, nf := saved.Fields(), now.Fields()
	for i := range sf {
		if resumeFree[sf[i].Path] || sf[i].String() == nf[i].String() {
			continue
		}
		return fmt.Errorf("cannot resume: %s is %s in the checkpoint but %s now; use the checkpoint's value (see its config.yaml) or start a new run", sf[i].Path, sf[i].String(), nf[i].String())
	}
	if saved.Train.Epochs != now.Train.Epochs {
		fmt.Fprintf(out, "note: train.epochs changed from %d to %d; the learning-rate schedule is stretched to the new length\n", saved.Train.Epochs, now.Train.Epochs)
	}
	return nil
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
