package trainer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"stoke/augment"
	"stoke/config"
	"stoke/data"
	"stoke/model"
)

// predictDataset has images large enough (64 px for a 16 px input) that
// the eval crop allows a DCT-scaled decode where libjpeg-turbo is loadable.
var predictDataset = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "stoke-predict-test-")
	if err != nil {
		return "", err
	}
	root := filepath.Join(dir, "ds")
	return root, data.Generate(root, data.SynthOptions{Classes: 3, Train: 10, Val: 6, Size: 64, Seed: 11, Quality: 90})
})

// predictRun trains one epoch on predictDataset and returns its config.
func predictRun(t *testing.T, dtype string) config.Config {
	t.Helper()
	root, err := predictDataset()
	if err != nil {
		t.Fatal(err)
	}
	c := tinyConfig(t)
	c.Data.Root = root
	c.Data.BatchDType = dtype
	c.Train.Epochs = 1
	runOK(t, c)
	return c
}

// TestPredictSeesWhatEvalSees: predict reads an image as the val loader
// does, so that on the val split its top-1 is right exactly as often as
// `train eval` says, and its probabilities are those of the model on the
// val loader's own batches, bit for bit, for float32 and uint8 batches. (It
// decoded at full size while the loader decoded at a DCT scale: where
// libjpeg-turbo is loadable the two saw different pixels.)
func TestPredictSeesWhatEvalSees(t *testing.T) {
	var dec data.Decoder
	kind, _ := dec.Resolved()
	t.Logf("JPEG decoder: %s (DCT-scaled decodes need turbo)", kind)
	for _, dtype := range []string{"auto", data.DTypeUint8} {
		t.Run(dtype, func(t *testing.T) {
			c := predictRun(t, dtype)
			ctx := context.Background()
			ev, err := Evaluate(ctx, c.Train.Out, "", "", io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			train, val, err := data.Scan(c.Data.Root)
			if err != nil {
				t.Fatal(err)
			}
			files := make([]string, len(val.Samples))
			for i, s := range val.Samples {
				files[i] = s.Path
			}
			preds, err := Predict(ctx, c.Train.Out, files, 1)
			if err != nil {
				t.Fatal(err)
			}
			hits := 0
			for i, p := range preds {
				if p.Err != nil {
					t.Fatalf("%s: %v", p.File, p.Err)
				}
				if p.Classes[0].Class == val.Classes[val.Samples[i].Label] {
					hits++
				}
			}
			if want := int(math.Round(ev.Top1 * float64(ev.Images))); ev.Images != len(files) || hits != want {
				t.Errorf("predict: %d of %d val images right; eval: %d of %d", hits, len(files), want, ev.Images)
			}

			// The val loader's batches through the same weights.
			st, err := loadCheckpointState(context.Background(), c.Train.Out)
			if err != nil {
				t.Fatal(err)
			}
			cfg := st.Config
			opt := cfg.ModelOptions()
			opt.Mean, opt.Std = vec3(cfg.Augment.Mean), vec3(cfg.Augment.Std)
			m, err := model.New(cfg.ModelSpec(len(st.Classes)), opt)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if err := m.Load(st.Params, nil); err != nil {
				t.Fatal(err)
			}
			tl, vl, err := newLoaders(cfg, train, val, nil, (&Device{}).batchDType(cfg.Data.BatchDType), data.Split{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			tl.Close()
			defer vl.Close()
			it := vl.Epoch(ctx, 0)
			defer it.Close()
			i, differ := 0, 0
			for {
				b, err := it.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				x := b.X
				if b.U8 != nil {
					x = make([]float32, len(b.U8))
					augment.NormalizeU8(x, b.U8, cfg.Data.ImageSize, opt.Mean, opt.Std)
				}
				logits, err := m.Logits(model.Input{X: x, N: b.N})
				b.Release()
				if err != nil {
					t.Fatal(err)
				}
				K := len(st.Classes)
				for j := 0; j < b.N; j++ {
					want := topK(logits[j*K:(j+1)*K], st.Classes, 1)[0]
					if got := preds[i].Classes[0]; got != want {
						differ++
						t.Errorf("%s: predict %s %v, the val loader's batch %s %v", preds[i].File, got.Class, got.Prob, want.Class, want.Prob)
					}
					i++
				}
			}
			if i != len(preds) {
				t.Fatalf("the val loader gave %d images, predict %d", i, len(preds))
			}
		})
	}
}

// TestPredictPerFileErrors: a file that cannot be predicted (missing, a
// folder, a FIFO, not an image) gets its own error naming what is wrong, and
// the others are predicted as they are alone; none of it stops the batch.
func TestPredictPerFileErrors(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	runOK(t, c)
	good, _ := filepath.Glob(filepath.Join(c.Data.Root, "val", "*", "*"))
	if len(good) < 2 {
		t.Fatalf("no val images in %s", c.Data.Root)
	}
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.jpg")
	if err := os.WriteFile(text, []byte("these are not pixels"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []string{good[0], filepath.Join(dir, "missing.jpg"), dir, text}
	want := []string{"", "no such file", "it is a folder", "unsupported image format"}
	if fifo := mkfifo(t, filepath.Join(dir, "pipe.jpg")); fifo != "" {
		files, want = append(files, fifo), append(want, "it is a named pipe (FIFO)")
	}
	files, want = append(files, good[1]), append(want, "")
	ctx := context.Background()
	preds, err := Predict(ctx, c.Train.Out, files, 100)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := Predict(ctx, c.Train.Out, []string{good[0], good[1]}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(preds) != len(files) {
		t.Fatalf("%d predictions for %d files", len(preds), len(files))
	}
	for i, p := range preds {
		if p.File != files[i] {
			t.Errorf("prediction %d is for %s, want %s", i, p.File, files[i])
		}
		if want[i] == "" {
			if p.Err != nil {
				t.Errorf("%s: %v", p.File, p.Err)
				continue
			}
			a := alone[0]
			if i > 0 {
				a = alone[1]
			}
			var sum float64
			for j, cp := range p.Classes {
				sum += cp.Prob
				if j > 0 && cp.Prob > p.Classes[j-1].Prob {
					t.Errorf("%s: not sorted: %+v", p.File, p.Classes)
				}
				if cp != a.Classes[j] {
					t.Errorf("%s: %+v among bad files, %+v alone", p.File, cp, a.Classes[j])
				}
			}
			if len(p.Classes) < 2 || math.Abs(sum-1) > 1e-6 {
				t.Errorf("%s: %d classes, probabilities sum to %v", p.File, len(p.Classes), sum)
			}
			continue
		}
		var ie *data.ImageError
		if p.Err == nil || !strings.Contains(p.Err.Error(), want[i]) || !errors.As(p.Err, &ie) || ie.Path != files[i] {
			t.Errorf("%s: error %v, want an *ImageError for it saying %q", files[i], p.Err, want[i])
		}
		if p.Classes != nil {
			t.Errorf("%s: failed, yet classes %+v", files[i], p.Classes)
		}
	}
}

// editWeights rewrites the latest checkpoint of run with edit applied to
// its weights, and records the new file's SHA-256 in state.json, as if
// the run itself had written them.
func editWeights(t *testing.T, run string, edit func([]model.NamedTensor)) {
	t.Helper()
	dir, ok := latestCheckpoint(run)
	if !ok {
		t.Fatalf("no checkpoint in %s", run)
	}
	p := filepath.Join(dir, weightsFile)
	params, meta, err := model.ReadSafetensors(p)
	if err != nil {
		t.Fatal(err)
	}
	edit(params)
	if err := model.WriteSafetensors(p, params, meta); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(dir, stateFile)
	var st map[string]any
	if err := json.Unmarshal([]byte(readFile(t, statePath)), &st); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(readFile(t, p)))
	st["sha256"].(map[string]any)[weightsFile] = hex.EncodeToString(sum[:])
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(statePath, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNonFiniteOutputsAreRefused: weights holding NaN (a diverged run, an
// edited file) are refused by predict and eval, naming the tensor, where
// they printed NaN% (eval: loss NaN, top-1 100%) and exited 0; weights that
// overflow on an image give that image an error, not a NaN probability, and
// eval an error, not a top-1.
func TestNonFiniteOutputsAreRefused(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	runOK(t, c)
	files, _ := filepath.Glob(filepath.Join(c.Data.Root, "val", "*", "*"))
	ctx := context.Background()

	huge := filepath.Join(t.TempDir(), "huge")
	if err := os.CopyFS(huge, os.DirFS(c.Train.Out)); err != nil {
		t.Fatal(err)
	}
	editWeights(t, huge, func(ps []model.NamedTensor) {
		for _, p := range ps {
			switch p.Name {
			case "conv0.bias": // every feature near the float32 maximum
				for i := range p.Data {
					p.Data[i] = 3e38
				}
			case "fc.weight": // and their sum past it
				for i := range p.Data {
					p.Data[i] = 1
				}
			}
		}
	})
	preds, err := Predict(ctx, huge, files[:2], 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range preds {
		if p.Err == nil || !strings.Contains(p.Err.Error(), "not finite") {
			t.Errorf("%s: overflowing weights gave %+v, %v; want an error saying the output is not finite", p.File, p.Classes, p.Err)
		}
	}

	if _, err := Evaluate(ctx, huge, "", "", io.Discard); err == nil || !strings.Contains(err.Error(), "not finite") {
		t.Errorf("eval with overflowing weights: %v; want an error saying the outputs are not finite", err)
	}

	editWeights(t, c.Train.Out, func(ps []model.NamedTensor) { ps[0].Data[1] = float32(math.NaN()) })
	_, perr := Predict(ctx, c.Train.Out, files[:1], 3)
	_, eerr := Evaluate(ctx, c.Train.Out, "", "", io.Discard)
	for what, err := range map[string]error{"predict": perr, "eval": eerr} {
		if err == nil || !strings.Contains(err.Error(), "conv0.weight[1] is NaN, not a finite number") || !strings.Contains(err.Error(), "use an earlier checkpoint") {
			t.Errorf("%s with a NaN weight: %v", what, err)
		}
	}
}

// TestCheckWeights: every value must be finite and a BatchNorm variance
// at least 0 (its square root is NaN below).
func TestCheckWeights(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []float32
		want string
	}{
		{"bn1.running_var", []float32{1, 0, 2}, ""},
		{"bn1.running_var", []float32{1, -0.5}, "bn1.running_var[1] is -0.5: a BatchNorm variance cannot be negative"},
		{"bn1.running_mean", []float32{-3}, ""},
		{"fc.weight", []float32{0, float32(math.Inf(-1))}, "fc.weight[1] is -Inf, not a finite number"},
		{"bn1.weight", []float32{float32(math.NaN())}, "bn1.weight[0] is NaN"},
	} {
		err := checkWeights([]model.NamedTensor{{Name: tc.name, Shape: []int{len(tc.data)}, Data: tc.data}})
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %v: %v, want %q", tc.name, tc.data, err, tc.want)
		}
	}
}

// TestEvalAndPredictErrorsAreNotResume: a checkpoint that cannot be read
// is reported as a checkpoint, not as a resume (the messages are shared
// with --resume, which read "resume: ...").
func TestEvalAndPredictErrorsAreNotResume(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nowhere")
	ctx := context.Background()
	_, perr := Predict(ctx, missing, []string{"a.jpg"}, 1)
	_, eerr := Evaluate(ctx, missing, "", "", io.Discard)
	for what, err := range map[string]error{"predict": perr, "eval": eerr} {
		if err == nil || !strings.HasPrefix(err.Error(), "checkpoint: "+missing+" is neither a run folder") || strings.Contains(err.Error(), "resume:") {
			t.Errorf("%s of a missing folder: %v", what, err)
		}
	}
}

// TestTopKOfLargeLogits: logits of 1e37, finite, give probabilities that
// sum to 1 (log-sum-exp in float64 lost the log of the sum beside them and
// gave each of three equal classes probability 1).
func TestTopKOfLargeLogits(t *testing.T) {
	classes := []string{"a", "b", "c"}
	for _, tc := range []struct {
		logits []float32
		want   []float64
	}{
		{[]float32{1e37, 1e37, 1e37}, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
		{[]float32{-1e37, 1e37, 0}, []float64{1, 0, 0}},
		{[]float32{0, float32(math.Log(3)), 0}, []float64{0.6, 0.2, 0.2}},
	} {
		top := topK(tc.logits, classes, 3)
		for i, cp := range top {
			if math.Abs(cp.Prob-tc.want[i]) > 1e-6 {
				t.Errorf("%v: %+v, want probabilities %v", tc.logits, top, tc.want)
				break
			}
		}
	}
}
