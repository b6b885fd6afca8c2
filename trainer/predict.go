package trainer

import (
	"context"
	"fmt"
	"math"
	"sort"

	"stoke/augment"
	"stoke/cpuops"
	"stoke/data"
	"stoke/model"
)

// Prediction is one image's top classes, most probable first.
type Prediction struct {
	File    string      `json:"file"`
	Classes []ClassProb `json:"top"`
}

// ClassProb is a class and its softmax probability.
type ClassProb struct {
	Class string  `json:"class"`
	Prob  float64 `json:"prob"`
}

// Predict runs a checkpoint (a run folder's latest, or a checkpoint folder)
// on image files with its evaluation transform (resize, centre crop,
// normalize) and returns the top k classes of each, named by the
// checkpoint's class list. It runs on the CPU, one image at a time.
func Predict(from string, files []string, k int) ([]Prediction, error) {
	st, err := loadCheckpointState(context.Background(), from)
	if err != nil {
		return nil, err
	}
	cfg := st.Config
	cfg.Data.BatchSize = 1
	m, err := model.New(cfg.ModelSpec(len(st.Classes)), cfg.ModelOptions())
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if err := m.Load(st.Params, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", st.Dir, err)
	}
	ep := augment.DefaultEvalParams(cfg.Data.ImageSize)
	ep.ResizeRatio, ep.Mean, ep.Std = cfg.Augment.EvalResizeRatio, vec3(cfg.Augment.Mean), vec3(cfg.Augment.Std)
	tf, err := augment.NewEval(ep)
	if err != nil {
		return nil, fmt.Errorf("augment: %w", err)
	}
	S := cfg.Data.ImageSize
	x := make([]float32, 3*S*S)
	out := make([]Prediction, 0, len(files))
	for _, f := range files {
		img, err := data.Decode(f, cfg.Data.MaxPixels)
		if err != nil {
			return nil, err
		}
		if err := tf.Apply(img, nil, x); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		logits, err := m.Logits(x, 1)
		if err != nil {
			return nil, err
		}
		out = append(out, Prediction{File: f, Classes: topK(logits, st.Classes, k)})
	}
	return out, nil
}

// topK is the k most probable classes under softmax(logits), ties to the
// lower index.
func topK(logits []float32, classes []string, k int) []ClassProb {
	lse := cpuops.LogSumExp(logits)
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	k = min(k, len(idx))
	top := make([]ClassProb, k)
	for i, j := range idx[:k] {
		top[i] = ClassProb{Class: displayName(classes[j]), Prob: math.Exp(float64(logits[j]) - lse)}
	}
	return top
}
