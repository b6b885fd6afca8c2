package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"stoke/config"
	"stoke/data"
	"stoke/figures"
	"stoke/model"
)

// runtimeBytes is what the program holds besides the model and the batch
// buffers: the Go runtime, the loader's per-worker scratch, the binary.
const runtimeBytes = 64 << 20

// checkMemory refuses, before any work, a run whose model and batch
// buffers alone would not fit in the machine's memory: a batch of 10^9 or
// 100000 px images fails here with the figure, not minutes later in an
// out-of-memory crash. The estimate follows the CPU engine's allocations
// (model.EstimateMemory) and counts the buffers of both loaders; the images'
// decoding is bounded elsewhere (data.max_pixels).
func checkMemory(cfg config.Config) error {
	have, source := machineMemory()
	if have <= 0 {
		return nil
	}
	need, detail := estimateRun(cfg)
	if need <= float64(have) {
		return nil
	}
	return fmt.Errorf("this run needs about %s of memory, more than this machine's %s (%s): %s; lower data.batch_size, data.image_size, data.workers x data.prefetch (the buffers per loader) or the model's channels and kernels",
		model.Bytes(need), model.Bytes(float64(have)), source, detail)
}

// estimateRun is the memory a run of cfg needs, and what it is made of.
func estimateRun(cfg config.Config) (float64, string) {
	d := cfg.Data
	classes := d.Synthetic.Classes
	if d.Root != "" {
		classes = countClasses(d.Root)
	}
	threads := cfg.Train.Threads
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	// The training model at the largest side of the run (data.progressive),
	// and, when the evaluation side differs from a training one, the model
	// at that side the trainer keeps besides it (trainer/sizes.go).
	trainSide, evalSide := cfg.MaxTrainSize(), cfg.EvalImageSize()
	m := model.EstimateMemory(cfg.ModelSpecAt(classes, trainSide), d.BatchSize, threads)
	models, evalModel := m.String(), 0.0
	if cfg.SizesVary() {
		em := model.EstimateMemory(cfg.ModelSpecAt(classes, evalSide), d.BatchSize, threads)
		evalModel = em.Total()
		models = fmt.Sprintf("%s at %d px and the evaluation model %s at %d px", m, trainSide, em, evalSide)
	}
	// The loader's pool: workers x prefetch buffers, 2 when loading inline;
	// a float, so that absurd flags (--workers 2^32 --prefetch 2^32) give an
	// absurd figure, not a product wrapped to 0.
	perLoader := 2.0
	switch {
	case d.Workers.Auto(): // inline's 2 first, then the most it may pick
		perLoader = max(perLoader, float64(data.AutoWorkersLimit(threads))*float64(d.Prefetch))
	case d.Workers > 0:
		perLoader = float64(d.Workers) * float64(d.Prefetch)
	}
	buffer := func(side int) float64 { // float32 CHW; uint8 batches take a quarter
		s := float64(side)
		return float64(d.BatchSize) * 3 * s * s * 4
	}
	pool := perLoader * (buffer(trainSide) + buffer(evalSide)) // the training and the validation loader
	eval := evalBytes(classes)
	sides := fmt.Sprintf("3x%dx%d", trainSide, trainSide)
	if trainSide != evalSide {
		sides = fmt.Sprintf("3x%dx%d (training) and 3x%dx%d (validation)", trainSide, trainSide, evalSide, evalSide)
	}
	return m.Total() + evalModel + pool + eval + runtimeBytes, fmt.Sprintf("the model %s, batch buffers %s (2 loaders x %.0f buffers of %d images of %s float32), evaluation %s (a %dx%d confusion matrix, its sum across ranks and its figure)",
		models, model.Bytes(pool), perLoader, d.BatchSize, sides, model.Bytes(eval), classes, classes)
}

// evalBytes is what an evaluation of classes classes holds besides the
// model: its confusion matrix (an int a cell) and the float64 vector that
// sums it across ranks, both growing with the square of the classes (10000
// take 1.5 GiB), and the figure of the last one, which figures bounds
// whatever the class count. The CSV is streamed to its file.
func evalBytes(classes int) float64 {
	n := float64(classes)
	return (8+8)*n*n + figures.ConfusionMemory(classes)
}

// countClasses is the number of class folders of an ImageFolder dataset,
// counted before the scan (which checks them): the folders in ROOT/train,
// or the lines of ROOT/classes.txt for tar shards.
// 2 (the fewest) when that cannot be read; the scan then says why.
func countClasses(root string) int {
	entries, _ := os.ReadDir(filepath.Join(root, "train")) // unreadable: 0, and so 2
	n := 0
	for _, e := range entries {
		if e.IsDir() || e.Type()&os.ModeSymlink != 0 {
			n++
		}
	}
	if n == 0 { // tar shards: classes.txt names the classes, when there is one
		if b, err := os.ReadFile(filepath.Join(root, "classes.txt")); err == nil {
			n = strings.Count(string(b), "\n")
		}
	}
	if n < 2 {
		return 2
	}
	return n
}

// fallbackMemory is the machine's memory assumed where it cannot be read
// (no /proc/meminfo: macOS, Windows).
const (
	fallbackMemory = 64 << 30
	fallbackSource = "assumed: this system's memory cannot be read here"
)
