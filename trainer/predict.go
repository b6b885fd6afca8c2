package trainer

import (
	"context"
	"fmt"
	"math"
	"sort"

	"stoke/model"
)

// Prediction is one image's top classes, most probable first, or Err when
// that image could not be predicted (unreadable, undecodable, an output
// that is not finite); the other images are predicted all the same.
type Prediction struct {
	File    string // the path as given
	Classes []ClassProb
	Err     error
}

// ClassProb is a class, its name's bytes exactly as the checkpoint holds
// them (a folder name need not be UTF-8), and its softmax probability.
type ClassProb struct {
	Class string
	Prob  float64
}

// Predict runs a checkpoint (a run folder's latest, or a checkpoint folder)
// on image files and returns the top k classes of each, in the order of
// files, named by the checkpoint's class list. Each image goes through
// what `train eval` does to a val image (evalSampler: the same decoder,
// DCT-scaled decode, resize, centre crop, normalize, batch dtype), in
// batches of the run's data.batch_size, on the CPU. A file that fails gets
// its own Err; the error returned is for what stops every file: the
// checkpoint (unreadable, or weights that are not finite), or ctx, when
// the predictions made so far are returned with it.
func Predict(ctx context.Context, from string, files []string, k int) ([]Prediction, error) {
	st, err := openCheckpoint(ctx, from)
	if err != nil {
		return nil, err
	}
	cfg := st.Config
	cfg.Data.BatchSize = max(1, min(cfg.Data.BatchSize, len(files)))
	opt := cfg.ModelOptions()
	m, err := model.New(cfg.ModelSpecAt(len(st.Classes), cfg.EvalImageSize()), opt)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if err := m.Load(st.Params, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", st.Dir, err)
	}
	s, err := newEvalSampler(cfg, (&Device{}).batchDType(cfg.Data.BatchDType))
	if err != nil {
		return nil, err
	}
	B, K := cfg.Data.BatchSize, len(st.Classes)
	out := make([]Prediction, len(files))
	slot := make([]int, 0, B) // slot -> index into files
	flush := func() error {
		if len(slot) == 0 {
			return nil
		}
		logits, err := m.Logits(model.Input{X: s.batch(len(slot)), N: len(slot)})
		if err != nil {
			return err
		}
		for j, i := range slot {
			row := logits[j*K : (j+1)*K]
			if err := finiteOutput(row, st.Classes); err != nil {
				out[i].Err = err
				continue
			}
			out[i].Classes = topK(row, st.Classes, k)
		}
		slot = slot[:0]
		return nil
	}
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return out[:i], err
		}
		out[i].File = f
		if out[i].Err = s.load(f, len(slot)); out[i].Err == nil {
			slot = append(slot, i)
		}
		if len(slot) == B {
			if err := flush(); err != nil {
				return out[:i+1], err
			}
		}
	}
	return out, flush()
}

// finiteOutput refuses logits that are not finite, which no probability
// can be made of: weights that overflow on this image.
func finiteOutput(logits []float32, classes []string) error {
	for j, v := range logits {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("the model's output for it is not finite (logit %v for class %s): its weights overflow on this image, so it has no prediction", v, displayName(classes[j]))
		}
	}
	return nil
}

// topK is the k most probable classes under softmax(logits), ties to the
// lower index. The probabilities are exp(l - max) over their sum, in
// float64: log-sum-exp would lose the sum's log beside logits of 1e37 and
// call every class certain.
func topK(logits []float32, classes []string, k int) []ClassProb {
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	top := float64(logits[idx[0]])
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - top)
	}
	k = min(k, len(idx))
	out := make([]ClassProb, k)
	for i, j := range idx[:k] {
		out[i] = ClassProb{Class: classes[j], Prob: math.Exp(float64(logits[j])-top) / sum}
	}
	return out
}
