package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The best checkpoint by validation top-1 is kept beside the latest, as
// timm and torchvision's references do: RUN/best/ holds a copy of that
// epoch's checkpoint (model.safetensors, optimizer.safetensors,
// state.json: `train eval --checkpoint RUN/best` reads it) and best.json,
// {"epoch": 7, "val_top1": 0.912}. best/ is itself the checkpoint: the
// epoch's own folder under checkpoints/ is pruned in its turn, so best.json
// names no folder that could be gone. Pruning never touches best/. Ties
// keep the earlier epoch. Being read back from the folder at each epoch,
// it carries over a resume.
const (
	bestDir  = "best"
	bestFile = "best.json"
)

type bestJSON struct {
	Epoch   int     `json:"epoch"`
	ValTop1 float64 `json:"val_top1"`
}

// keepBest copies checkpoint dir (of epoch, val top-1 top1) to RUN/best
// when it beats what RUN/best/best.json records, and says whether it did.
// The copy is made in a temporary folder and renamed into place.
func keepBest(run, dir string, epoch int, top1 float64) (bool, error) {
	final, err := inRun(run, bestDir)
	if err != nil {
		return false, fmt.Errorf("best checkpoint: %w", err)
	}
	if b, err := readSmallFile(context.Background(), filepath.Join(final, bestFile), maxPointerFile); err == nil {
		var old bestJSON
		if json.Unmarshal(b, &old) == nil && old.ValTop1 >= top1 {
			return false, nil
		}
	}
	tmp, err := mkdirTemp(run, "."+bestDir+".tmp-")
	if err != nil {
		return false, fmt.Errorf("best checkpoint: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	for _, name := range []string{weightsFile, optimFile, stateFile} {
		if err := copyFile(filepath.Join(dir, name), filepath.Join(tmp, name)); err != nil {
			return false, fmt.Errorf("best checkpoint: %w", err)
		}
	}
	js, _ := json.Marshal(bestJSON{Epoch: epoch, ValTop1: top1})
	if err := writeFileAtomic(filepath.Join(tmp, bestFile), append(js, '\n')); err != nil {
		return false, err
	}
	if err := os.RemoveAll(final); err != nil {
		return false, fmt.Errorf("best checkpoint: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return false, fmt.Errorf("best checkpoint: %w", err)
	}
	syncDir(run)
	return true, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
