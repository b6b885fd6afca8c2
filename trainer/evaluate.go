package trainer

import (
	"context"
	"fmt"
	"io"
	"slices"

	"stoke/data"
)

// EvalReport is what Evaluate measured.
type EvalReport struct {
	Checkpoint string  `json:"checkpoint"`
	Images     int     `json:"images"`
	Loss       float64 `json:"loss"`
	Top1       float64 `json:"top1"`
	Top5       float64 `json:"top5"`
}

// Evaluate runs a checkpoint (a run folder's latest, or a checkpoint
// folder) over the validation split of its dataset, or of dataRoot when
// that is set (which must have the same classes).
func Evaluate(ctx context.Context, from, dataRoot string, out io.Writer) (*EvalReport, error) {
	st, err := loadCheckpointState(ctx, from)
	if err != nil {
		return nil, err
	}
	cfg := st.Config
	if dataRoot != "" {
		cfg.Data.Root = dataRoot
	}
	root, trainSet, valSet, err := openDataset(ctx, cfg.Data, out)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(valSet.Classes, st.Classes) {
		return nil, fmt.Errorf("the checkpoint %s was trained on classes %s; the dataset at %s has %s", st.Dir, showClasses(st.Classes), root, showClasses(valSet.Classes))
	}
	dev, err := openDevice(cfg.ModelSpec(len(st.Classes)), cfg.ModelOptions(), cfg, out)
	if err != nil {
		return nil, err
	}
	if dev.Close != nil {
		defer dev.Close()
	}
	defer dev.Backend.Close()
	if err := dev.Backend.Load(st.Params, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", st.Dir, err)
	}
	trainLoader, valLoader, err := newLoaders(cfg, trainSet, valSet, dev.Alloc, dev.batchDType(cfg.Data.BatchDType), data.Split{})
	if err != nil {
		return nil, err
	}
	trainLoader.Close()
	defer valLoader.Close()
	ev, err := evaluate(ctx, dev.Backend, valLoader, 0)
	if err != nil {
		return nil, err
	}
	n := float64(max(ev.Images, 1))
	return &EvalReport{Checkpoint: st.Dir, Images: ev.Images, Loss: ev.LossSum / n, Top1: float64(ev.Top1) / n, Top5: float64(ev.Top5) / n}, nil
}
