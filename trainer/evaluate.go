package trainer

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"stoke/augment"
	"stoke/config"
	"stoke/data"
	"stoke/model"
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
// that is set (which must have the same classes), on device: cpu or cuda,
// or "" for evalDevice's choice.
func Evaluate(ctx context.Context, from, dataRoot, device string, out io.Writer) (*EvalReport, error) {
	st, err := openCheckpoint(ctx, from)
	if err != nil {
		return nil, err
	}
	cfg := st.Config
	if dataRoot != "" {
		cfg.Data.Root = dataRoot
	}
	if device == "" {
		device = evalDevice(cfg.Train.Device, out)
	}
	if device != "cuda" {
		cfg.Data.PinMemory, cfg.Train.NonBlocking = false, false // cuda's settings: on the cpu they would only print a note
	}
	cfg.Train.Device = device
	root, trainSet, valSet, err := openDataset(ctx, cfg.Data, out)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(valSet.Classes, st.Classes) {
		return nil, fmt.Errorf("the checkpoint %s was trained on classes %s; the dataset at %s has %s", st.Dir, showClasses(st.Classes), root, showClasses(valSet.Classes))
	}
	dev, err := openDevice(cfg.ModelSpecAt(len(st.Classes), cfg.EvalImageSize()), cfg.ModelOptions(), cfg, out)
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
	trainLoader, valLoader, err := newLoaders(cfg, trainSet, valSet, dev.Alloc, dev.batchDType(cfg.Data.BatchDType), data.Split{}, 0)
	if err != nil {
		return nil, err
	}
	trainLoader.Close()
	defer valLoader.Close()
	ev, err := evaluate(ctx, dev.Backend, valLoader, 0)
	if err != nil {
		return nil, err
	}
	if math.IsNaN(ev.LossSum) || math.IsInf(ev.LossSum, 0) {
		return nil, fmt.Errorf("checkpoint %s: its loss over the %d val images of %s is %v: the model's outputs are not finite (its weights overflow on them), so its accuracy means nothing", st.Dir, ev.Images, root, ev.LossSum)
	}
	n := float64(max(ev.Images, 1))
	return &EvalReport{Checkpoint: st.Dir, Images: ev.Images, Loss: ev.LossSum / n, Top1: float64(ev.Top1) / n, Top5: float64(ev.Top5) / n}, nil
}

// evalDevice is the device an evaluation runs on when none is asked for:
// the one the checkpoint was trained on where this binary and machine can
// run it, so that eval reproduces the run's own figures; the cpu otherwise
// (a run trained on a GPU, evaluated where there is none), with a note that
// says why. A checkpoint's device used to be opened as it was, so that a
// GPU run's checkpoint could not be evaluated on a machine without one.
func evalDevice(trained string, out io.Writer) string {
	if trained != "cuda" {
		return "cpu"
	}
	why := ErrNoCUDA.Error()
	if newCUDADevice != nil {
		var err error
		if checkCUDA != nil {
			err = checkCUDA()
		}
		if err == nil {
			return "cuda"
		}
		why = err.Error()
	}
	why, _, _ = strings.Cut(why, ";")
	fmt.Fprintf(out, "note: the checkpoint was trained on cuda, which is not usable here (%s); evaluating on the cpu (--device cuda insists)\n", why)
	return "cpu"
}

// openCheckpoint is loadCheckpointState for eval and predict: a checkpoint
// whole and verified, with weights a prediction can be made from
// (checkWeights). Its errors say "checkpoint:" where --resume's say
// "resume:", since nothing is resumed here.
func openCheckpoint(ctx context.Context, from string) (*checkpointState, error) {
	st, err := loadCheckpointState(ctx, from)
	if err != nil {
		return nil, retitle(err, "resume: ", "checkpoint: ")
	}
	if err := checkWeights(st.Params); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w; it cannot predict anything: use an earlier checkpoint (%s) or the run's best/", st.Dir, err, filepath.Dir(st.Dir))
	}
	return st, nil
}

// checkWeights refuses weights that make every output NaN: a value that is
// not finite (a run that diverged, a file edited), or a BatchNorm
// running_var below 0 (a variance cannot be; its square root is NaN).
func checkWeights(params []model.NamedTensor) error {
	for _, p := range params {
		isVar := strings.HasSuffix(p.Name, "running_var")
		for i, v := range p.Data {
			switch f := float64(v); {
			case math.IsNaN(f) || math.IsInf(f, 0):
				return fmt.Errorf("%s[%d] is %v, not a finite number", p.Name, i, v)
			case isVar && v < 0:
				return fmt.Errorf("%s[%d] is %v: a BatchNorm variance cannot be negative", p.Name, i, v)
			}
		}
	}
	return nil
}

// retitled is an error shown with another prefix than its own.
type retitled struct {
	err         error
	old, prefix string
}

func (e *retitled) Error() string { return e.prefix + strings.TrimPrefix(e.err.Error(), e.old) }
func (e *retitled) Unwrap() error { return e.err }

// retitle shows err with prefix in place of old, when err starts with old.
func retitle(err error, old, prefix string) error {
	if !strings.HasPrefix(err.Error(), old) {
		return err
	}
	return &retitled{err, old, prefix}
}

// evalTransform is the evaluation transform of cfg: resize by
// augment.eval_resize_ratio, centre crop, normalize; the val loader's
// (newLoaders) and predict's.
func evalTransform(cfg config.Config) (*augment.Eval, error) {
	ep := augment.DefaultEvalParams(cfg.EvalImageSize())
	ep.ResizeRatio, ep.Mean, ep.Std = cfg.Augment.EvalResizeRatio, vec3(cfg.Augment.Mean), vec3(cfg.Augment.Std)
	tf, err := augment.NewEval(ep)
	if err != nil {
		return nil, fmt.Errorf("augment: %w", err)
	}
	return tf, nil
}

// evalSampler turns image files into a batch as the val loader does
// (data.Loader.load, in the stages of data/stages.go): the same decoder and
// limits, the eval crop, the largest DCT scale it allows, then resize,
// crop and normalize, into float32, or into uint8 normalized as the model
// normalizes a uint8 batch. `train predict` reads its files through it, so
// that it sees the pixels `train eval` sees.
type evalSampler struct {
	dec  data.Decoder
	tf   *augment.Eval
	u8   bool
	x    []float32 // the batch, B samples
	q    []uint8   // the uint8 batch, when u8
	n    int       // floats per sample
	mean [3]float32
	std  [3]float32
	size int
}

func newEvalSampler(cfg config.Config, dtype string) (*evalSampler, error) {
	tf, err := evalTransform(cfg)
	if err != nil {
		return nil, err
	}
	d := cfg.Data
	S := cfg.EvalImageSize()
	s := &evalSampler{
		dec: data.Decoder{MaxPixels: d.MaxPixels, MaxBytes: int64(d.MaxDecode), Kind: d.Decoder},
		tf:  tf, u8: dtype == data.DTypeUint8, n: 3 * S * S, size: S,
		mean: vec3(cfg.Augment.Mean), std: vec3(cfg.Augment.Std),
	}
	s.x = make([]float32, d.BatchSize*s.n)
	if s.u8 {
		s.q = make([]uint8, d.BatchSize*s.n)
	}
	return s, nil
}

// load reads, decodes and transforms the image at path into sample slot
// of the batch. Its error is the loader's for that file (an
// *data.ImageError for reading and decoding).
func (s *evalSampler) load(path string, slot int) error {
	file, err := s.dec.ReadFile(path)
	if err != nil {
		return err
	}
	h, err := s.dec.DecodeHeader(path, file)
	if err != nil {
		return err
	}
	c := data.PlanCrop(s.tf, h, nil, false) // the eval crop draws nothing
	img, scale, err := s.dec.DecodeScaled(path, file, h, c.Scale)
	if err != nil {
		return err
	}
	lo, hi := slot*s.n, (slot+1)*s.n
	if s.u8 {
		return data.ApplyCrop(s.tf, img, scale, c, nil, path, nil, s.q[lo:hi])
	}
	return data.ApplyCrop(s.tf, img, scale, c, nil, path, s.x[lo:hi], nil)
}

// batch is the first n samples as the model's float32 input, the rest of
// the batch zero (as the loader leaves a short batch).
func (s *evalSampler) batch(n int) []float32 {
	if s.u8 {
		clear(s.q[n*s.n:])
		augment.NormalizeU8(s.x, s.q, s.size, s.mean, s.std)
	} else {
		clear(s.x[n*s.n:])
	}
	return s.x
}
