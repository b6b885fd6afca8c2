// Package trainer is stoke's training loop: it wires a dataset, the loader,
// the transforms and the model together, and owns what a run leaves behind —
// progress on the terminal, metrics.jsonl, the resolved config, the
// checkpoints that --resume continues from exactly (also from the middle of
// an epoch, after an interrupt), and a trace-event timeline.
//
// Run reads top to bottom as one epoch loop; trainEpoch and evaluate are the
// two halves of an epoch. Time is split into waiting for data (blocked in
// the loader), copying to the device and computing, so a starved model shows.
//
// device.go is the seam to where the compute happens: a Backend (the CPU
// model, or the CUDA backend of a stokecuda build, device_cuda.go) with
// optional powers the loop uses when present — stepping asynchronously
// (AsyncBackend: step N computes while batch N+1 is fetched and copied),
// taking uint8 batches (U8Backend), timing its own copies and compute
// (StepTimer) — and the allocator its batch buffers come from.
package trainer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"stoke/augment"
	"stoke/config"
	"stoke/data"
	"stoke/dist"
	"stoke/model"
	"stoke/trace"
)

// Options are the parts of a run that are not configuration.
type Options struct {
	// Out receives progress and the epoch lines; nil = os.Stdout.
	Out io.Writer
	// AfterEpoch, when set, is called after each epoch's checkpoint is
	// written; returning false ends the run there (as if it had been
	// configured for that many epochs).
	AfterEpoch func(EpochMetrics) bool
	// Trace, when set, receives a timeline of the run: loader workers
	// building batches, the train loop waiting, copying and computing.
	Trace *trace.Recorder
	// Comm, when set, makes this one rank of a data-parallel run
	// (trainer/dist.go); nil = one process.
	Comm dist.Comm

	afterStep   func(step int)        // tests: called after every training step
	wrapBackend func(Backend) Backend // tests: stands between the loop and the model
}

// Summary is what a finished run reports.
type Summary struct {
	RunDir string
	Epochs []EpochMetrics // this invocation's epochs
	// CheckpointEpochs is, for a resume with nothing left to train, the
	// epochs its checkpoint has.
	CheckpointEpochs int
}

// ErrNoCUDA is returned for device cuda in a build without CUDA support.
var ErrNoCUDA = errors.New("device cuda: this binary was built without CUDA; build with `go build -tags stokecuda ./cmd/train` (see docs/cuda.md) or use --device cpu")

// Run trains as cfg says: it resumes from cfg.Train.Resume when set, writes a
// checkpoint after every epoch, and returns when all epochs are done, ctx is
// cancelled, or something fails.
func Run(ctx context.Context, cfg config.Config, opt Options) (*Summary, error) {
	out := opt.Out
	if out == nil {
		out = os.Stdout
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid config:\n%w", err)
	}
	d := newDistRun(opt.Comm)
	if !d.writer() {
		out = io.Discard // only rank 0 reports
	}
	if cfg.Train.Device == "cuda" { // before any work, not after the dataset is made
		if newCUDADevice == nil {
			return nil, ErrNoCUDA
		}
		if err := checkCUDA(); err != nil {
			return nil, err
		}
	}
	if cfg.Train.Threads > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cfg.Train.Threads))
	}
	// Where the run goes, and where it starts from.
	run := cfg.Train.Out
	var start *checkpointState
	sameRun := false
	if cfg.Train.Resume != "" {
		var err error
		if start, err = loadCheckpointState(cfg.Train.Resume); err != nil {
			return nil, err
		}
		if err := compatible(start, d.resumeConfig(cfg)); err != nil {
			return nil, err
		}
		if start.Epoch >= cfg.Train.Epochs { // nothing to do: touch nothing
			fmt.Fprintf(out, "nothing to train: the checkpoint %s has %s done and train.epochs is %d; nothing was changed (a larger --epochs continues the run)\n", start.Dir, epochsDone(start), cfg.Train.Epochs)
			return &Summary{RunDir: runOf(cfg.Train.Resume), CheckpointEpochs: start.Epoch}, nil
		}
		sameRun = sameFolder(runOf(cfg.Train.Resume), run)
	}
	if d.writer() { // rank 0 holds the run folder for every rank
		folder, err := claimRunFolder(run, sameRun, out)
		if err != nil {
			var used *usedFolderError
			if errors.As(err, &used) && start != nil {
				return nil, fmt.Errorf("cannot resume %s into --out %s: that folder holds another run (%s), and the two would be mixed; continue that one with --resume %s, or choose an empty --out", cfg.Train.Resume, run, strings.Join(used.Found, ", "), run)
			}
			return nil, err
		}
		defer folder.release()
	}
	// A fresh run that ends before its first checkpoint (an error in
	// set-up, an interrupt before the first step) takes back the files it
	// wrote, so that the same command can simply be run again.
	checkpointed := false
	defer func() {
		if start == nil && !checkpointed && d.writer() {
			for _, name := range []string{"config.yaml", "metrics.jsonl"} {
				os.Remove(filepath.Join(run, name))
			}
		}
	}()
	if start != nil && start.Unverified {
		fmt.Fprintf(out, "note: %s was written by an older stoke (format 1): its files, decoder and dataset cannot be checked\n", start.Dir)
	}

	// The dataset.
	root, trainSet, valSet, err := d.openDataset(ctx, cfg.Data, out)
	if err != nil {
		return nil, err
	}
	if len(trainSet.Classes) < 2 {
		return nil, fmt.Errorf("dataset %s has one class (%s); a classifier needs at least two classes, each a folder of images under train/ and val/", root, trainSet.Classes[0])
	}
	files, err := data.ListFiles(trainSet, valSet)
	if err != nil {
		return nil, err
	}
	decoder := resolvedDecoder(cfg.Data.Decoder)
	if start != nil {
		if err := sameInputs(start, root, trainSet.Classes, files, decoder, cfg.Data.Decoder); err != nil {
			return nil, err
		}
	}
	if start != nil && start.Config.Train.Epochs != cfg.Train.Epochs {
		fmt.Fprintf(out, "note: train.epochs changed from %d to %d; the learning-rate schedule is stretched to the new length\n", start.Config.Train.Epochs, cfg.Train.Epochs)
	}
	resolved, err := cfg.Marshal()
	if err != nil {
		return nil, err
	}
	if d.writer() {
		if err := os.MkdirAll(run, 0o755); err != nil {
			return nil, fmt.Errorf("run folder: %w", err)
		}
		if err := writeFileAtomic(filepath.Join(run, "config.yaml"), resolved); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(out, "# resolved config (saved in %s)\n%s", filepath.Join(run, "config.yaml"), resolved)
	fmt.Fprintf(out, "dataset %s: %d classes, %d train / %d val images\n", root, len(trainSet.Classes), len(trainSet.Samples), len(valSet.Samples))

	// The device and the model on it.
	dev, err := openDevice(cfg.ModelSpec(len(trainSet.Classes)), cfg.ModelOptions(), cfg, out)
	if err != nil {
		return nil, err
	}
	if dev.Close != nil {
		defer dev.Close() // after the loaders, whose buffers it may own: defers run last-in first-out
	}
	if err := ctx.Err(); err != nil { // interrupted while the model was built
		return nil, err
	}
	net := dev.Backend
	if opt.wrapBackend != nil {
		net = opt.wrapBackend(net)
	}
	defer net.Close()
	firstEpoch, step := 0, 0
	var partial progressState // of an epoch interrupted part-way
	if start != nil {
		if err := net.Load(start.Params, start.Optim); err != nil {
			return nil, fmt.Errorf("resume from %s: %w", start.Dir, err)
		}
		firstEpoch, step, partial = start.Epoch, start.Step, d.ownShare(start.Partial)
		fmt.Fprintf(out, "resumed from %s: %d epochs and %d batches done (step %d)\n", start.Dir, start.Epoch, partial.Batches, start.Step)
	}
	fmt.Fprintf(out, "model: %d parameters\n", net.NumParams())
	if err := d.setup(net, cfg, out); err != nil {
		return nil, err
	}

	// The loaders.
	feed := newFeeder(net, cfg)
	trainLoader, valLoader, err := newLoaders(cfg, trainSet, valSet, dev.Alloc, feed.dtype(cfg.Data.BatchDType), d.split())
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "loader: %d workers, JPEG decoder %s, %s batches in %s memory\n", cfg.Data.Workers, trainLoader.DecoderName(), trainLoader.DType(), allocName(dev.Alloc))
	defer trainLoader.Close()
	defer valLoader.Close()
	if start != nil && !start.Unverified && start.StepsPerEpoch != trainLoader.NumBatches() {
		return nil, fmt.Errorf("cannot resume from %s: its epochs had %d steps, this run's have %d", start.Dir, start.StepsPerEpoch, trainLoader.NumBatches())
	}
	if start != nil && start.Step != start.Epoch*trainLoader.NumBatches()+start.Partial.Batches {
		return nil, fmt.Errorf("resume: %s is inconsistent: step %d, but %d epochs of %d steps and %d batches make %d", filepath.Join(start.Dir, stateFile), start.Step, start.Epoch, trainLoader.NumBatches(), start.Partial.Batches, start.Epoch*trainLoader.NumBatches()+start.Partial.Batches)
	}

	if start != nil && !sameRun && d.writer() { // a resume into a new folder takes the run's earlier epochs along
		if b, err := os.ReadFile(filepath.Join(runOf(cfg.Train.Resume), "metrics.jsonl")); err == nil {
			if err := writeFileAtomic(filepath.Join(run, "metrics.jsonl"), b); err != nil {
				return nil, err
			}
		}
	}
	var metrics *metricsFile
	if d.writer() {
		if metrics, err = openMetrics(run, firstEpoch); err != nil {
			return nil, err
		}
		defer metrics.Close()
	}

	opt.Trace.Thread(loopRow, "train loop")
	opt.Trace.Thread(modelRow, "model ("+dev.Name+")")
	for w := 0; w < cfg.Data.Workers; w++ {
		opt.Trace.Thread(w+1, fmt.Sprintf("loader worker %d", w))
	}
	sched := schedule{cfg: cfg.Optim, stepsPerEpoch: trainLoader.NumBatches(), epochs: cfg.Train.Epochs}
	bar := newProgress(out, cfg.Train.Progress)
	sum := &Summary{RunDir: run}
	save := func(epochsDone int, p progressState) (string, error) {
		if !d.writer() {
			return "", nil
		}
		params, optim, err := net.State()
		if err != nil {
			return "", fmt.Errorf("checkpoint: %w", err)
		}
		dir, err := saveCheckpoint(run, checkpointState{
			Epoch: epochsDone, Step: step, StepsPerEpoch: trainLoader.NumBatches(), Partial: p, Config: d.checkpointConfig(cfg),
			Classes: trainSet.Classes, Decoder: decoder, Dataset: files,
			Params: params, Optim: optim,
		}, cfg.Train.KeepCkpts)
		checkpointed = checkpointed || err == nil
		return dir, err
	}
	for epoch := firstEpoch; epoch < cfg.Train.Epochs; epoch++ {
		t0 := time.Now()
		tr := trainResult{progressState: partial}
		partial = progressState{}
		stepsBefore := step
		err := trainEpoch(ctx, feed, trainLoader, epoch, &step, &tr, sched, bar, opt)
		if err != nil {
			// Only an interruption between steps leaves a state worth a
			// checkpoint; a failed step (a NaN loss, say) does not.
			interrupted := ctx.Err() != nil && errors.Is(err, ctx.Err())
			if !interrupted || d.parallel() { // ranks stop at different steps: keep the last epoch's checkpoint
				return sum, err
			}
			if step == stepsBefore { // nothing new since the last checkpoint
				if dir, ok := latestCheckpoint(run); ok {
					return sum, &InterruptedError{Checkpoint: dir, Run: run, Err: err}
				}
				return sum, err
			}
			// Interrupted between steps: keep what this epoch has done so far.
			dir, serr := save(epoch, tr.progressState)
			if serr != nil { // not wrapping err: this is a failure, not an interrupt with nothing to keep
				return sum, fmt.Errorf("interrupted in epoch %d, and its checkpoint could not be written: %w", epoch+1, serr)
			}
			return sum, &InterruptedError{Checkpoint: dir, Run: run, Err: err}
		}
		if err := d.reduceTrain(&tr); err != nil {
			return sum, err
		}
		t1 := time.Now()
		ev, err := evaluate(ctx, feed, valLoader, epoch)
		if err == nil {
			err = d.reduceEval(&ev, len(trainSet.Classes))
		}
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) { // the epoch's training is done: keep it
				dir, serr := save(epoch, tr.progressState)
				if serr != nil {
					return sum, fmt.Errorf("interrupted while evaluating epoch %d, and its checkpoint could not be written: %w", epoch+1, serr)
				}
				return sum, &InterruptedError{Checkpoint: dir, Run: run, Err: err}
			}
			return sum, err
		}
		opt.Trace.Span(modelRow, "eval", fmt.Sprintf("evaluate epoch %d", epoch+1), t1, time.Now(), nil)
		if d.writer() {
			if err := writeConfusion(run, epoch+1, trainSet.Classes, ev.Confusion); err != nil {
				return sum, err
			}
		}
		m := epochMetrics(epoch, cfg.Train.Epochs, tr, ev, time.Since(t0), sched.lr(step-1))
		if metrics != nil {
			if err := metrics.Write(m); err != nil {
				return sum, err
			}
		}
		dir, err := save(epoch+1, progressState{})
		if err != nil {
			return sum, err
		}
		m.Checkpoint = dir
		if d.writer() {
			if _, err := keepBest(run, dir, epoch+1, m.ValTop1); err != nil {
				return sum, err
			}
		}
		// Collect the epoch's garbage (mostly the checkpoint's copies) now,
		// at a boundary, and hand freed pages back to the OS, so that the
		// footprint stays flat from epoch to epoch instead of creeping up to
		// the collector's next goal (costs a few ms an epoch).
		debug.FreeOSMemory()
		bar.EpochDone(m)
		d.epochDone(out)
		sum.Epochs = append(sum.Epochs, m)
		if opt.AfterEpoch != nil && !opt.AfterEpoch(m) {
			break
		}
	}
	if d.writer() {
		return sum, writeConfusionPNG(run) // eval/confusion.png of the last evaluation
	}
	return sum, nil
}

// InterruptedError reports a run stopped by its context between two steps,
// with a checkpoint of where it stopped (written then, or the last one when
// nothing had happened since) that --resume continues from exactly.
type InterruptedError struct {
	Checkpoint string // the checkpoint folder written
	Run        string // the run folder to resume
	Err        error  // the context's error
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted; the run is saved in checkpoint %s: continue with --resume %s", e.Checkpoint, shellQuote(e.Run))
}

func (e *InterruptedError) Unwrap() error { return e.Err }

// progressState is how far an epoch's training has got: what an interrupted
// epoch's checkpoint records, so that its resumed half adds up to the same
// numbers as an uninterrupted epoch.
type progressState struct {
	Batches int     `json:"batches"` // batches done
	Images  int     `json:"images"`
	Correct int     `json:"correct"`
	LossSum float64 `json:"loss_sum"` // JSON keeps float64 exactly
}

// trainResult is one epoch's training half. Its progressState covers the
// whole epoch, also the part an interrupted run did; the times and
// ImagesNow only this invocation's part of it.
type trainResult struct {
	progressState
	ImagesNow     int           // images trained in this invocation
	Wait          time.Duration // blocked in the loader
	Copy, Compute time.Duration // as the backend measures them (StepTimer), else all compute
	Wall          time.Duration
	Skipped       []string // images that could not be decoded (bad_images: skip)
}

// trainEpoch runs one pass over the training set: wait for a batch, step,
// give the buffer back, record. It starts after r.Batches batches (the part
// an interrupted run already did) and stops between two steps when ctx is
// cancelled, with every step it started finished.
//
// With a backend that steps asynchronously (AsyncBackend, the GPU), step N
// is still computing while batch N+1 is fetched and its copy started: the
// overlap that non_blocking buys.
func trainEpoch(ctx context.Context, feed *feeder, loader *data.Loader, epoch int, step *int, r *trainResult, sched schedule, bar *progress, opt Options) error {
	it := loader.Epoch(ctx, epoch)
	defer it.Close()
	bar.EpochStart(epoch, sched.epochs, loader.NumBatches())
	start := time.Now()
	defer func() { r.Wall = time.Since(start) }()

	var pending *stepInFlight
	finish := func() error { // waits for the pending step and records it
		if pending == nil {
			return nil
		}
		p := pending
		pending = nil
		t := time.Now()
		res, err := p.wait()
		t2 := time.Now()
		if err == nil && (math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0)) {
			err = fmt.Errorf("%w: %v", model.ErrNonFiniteLoss, res.Loss)
		}
		if errors.Is(err, model.ErrNonFiniteLoss) {
			return fmt.Errorf("epoch %d step %d: %v (learning rate %.4g); training stopped, the last good checkpoint is kept: lower optim.lr or check the data", epoch+1, p.step, err, p.lr)
		}
		if err != nil {
			return fmt.Errorf("epoch %d step %d: %w", epoch+1, p.step, err)
		}
		copyTime, computeTime := time.Duration(0), p.host+t2.Sub(t)
		if timer, ok := feed.net.(StepTimer); ok {
			copyTime, computeTime = timer.LastStepTimes()
		}
		r.Wait += p.waited
		r.Copy += copyTime
		r.Compute += computeTime
		traceStep(opt.Trace, p, t2, copyTime, computeTime, res.Loss)
		r.Batches++
		r.Images += p.batch.N
		r.ImagesNow += p.batch.N
		r.Correct += res.Correct
		r.LossSum += res.Loss * float64(p.batch.N)
		bar.Step(r.LossSum/float64(r.Images), float64(r.Correct)/float64(r.Images), float64(r.ImagesNow)/time.Since(start).Seconds(), p.lr)
		if opt.afterStep != nil {
			opt.afterStep(p.step + 1)
		}
		return nil
	}
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			if ferr := finish(); ferr != nil {
				return ferr
			}
			return err
		}
		t0 := time.Now()
		b, err := it.Next()
		if err == io.EOF {
			return finish()
		}
		if err != nil {
			if ferr := finish(); ferr != nil {
				return ferr
			}
			return err
		}
		if i < r.Batches { // done before the interruption: same batch, already learnt
			b.Release()
			// The epoch's figures are of the part this invocation
			// trains: its wall time starts after the skipped batches.
			start = time.Now()
			continue
		}
		t1 := time.Now()
		for _, idx := range b.Skipped {
			r.Skipped = append(r.Skipped, loader.Index().Samples[idx].Path)
		}
		s := &stepInFlight{batch: b.Info(), step: *step, lr: sched.lr(*step), waited: t1.Sub(t0), started: t1}
		var async bool
		s.wait, async, err = feed.start(b, float32(s.lr))
		b.Release() // the step has its own copy of the batch now
		if err != nil {
			return fmt.Errorf("epoch %d step %d: %w", epoch+1, s.step, err)
		}
		s.host = time.Since(t1)
		*step++
		if err := finish(); err != nil { // the step before this one
			return err
		}
		pending = s
		if !async {
			if err := finish(); err != nil {
				return err
			}
		}
	}
}

// stepInFlight is a training step started and not yet recorded.
type stepInFlight struct {
	batch   data.BatchInfo
	step    int
	lr      float64
	waited  time.Duration // blocked in the loader for its batch
	started time.Time
	host    time.Duration // spent starting it
	wait    func() (model.StepResult, error)
}

// Rows of the timeline.
const (
	loopRow  = 0  // the train loop, waiting for data
	modelRow = 99 // the model's steps
)

// traceStep puts one training step on the timeline: the batch being built
// (on its worker's row, or inside the wait when loading inline), the wait,
// and the step with its copy and compute.
func traceStep(tr *trace.Recorder, s *stepInFlight, end time.Time, copyTime, computeTime time.Duration, loss float64) {
	if tr == nil {
		return
	}
	b := s.batch
	row := b.Worker + 1
	if b.Worker < 0 {
		row = loopRow
	}
	tr.Span(row, "load", fmt.Sprintf("load batch %d", b.Index), b.Start, b.End, map[string]any{"epoch": b.Epoch + 1, "batch": b.Index, "images": b.N})
	tr.Span(loopRow, "wait", "wait for data", s.started.Add(-s.waited), s.started, map[string]any{"batch": b.Index})
	tr.Span(modelRow, "step", "train step", s.started, end, map[string]any{"step": s.step, "loss": loss})
	if copyTime > 0 {
		tr.Span(modelRow, "copy", "copy to device", s.started, s.started.Add(min(copyTime, end.Sub(s.started))), nil)
	}
	if computeTime > 0 && computeTime <= end.Sub(s.started) {
		tr.Span(modelRow, "compute", "compute", end.Add(-computeTime), end, nil)
	}
}

// evalResult is one epoch's evaluation half.
type evalResult struct {
	Images, Top1, Top5 int
	LossSum            float64
	Wall               time.Duration
	Confusion          confusion // nil when the backend reports no predictions
}

// evaluate runs the model forward over the validation set.
func evaluate(ctx context.Context, feed *feeder, loader *data.Loader, epoch int) (evalResult, error) {
	var r evalResult
	start := time.Now()
	it := loader.Epoch(ctx, epoch)
	defer it.Close()
	for {
		b, err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return r, err
		}
		n := b.N
		if n == 0 { // a rank's empty slice of the last batch (data.Split)
			b.Release()
			continue
		}
		res, err := feed.eval(b)
		b.Release()
		if err != nil {
			return r, fmt.Errorf("evaluation: %w", err)
		}
		r.Images += n
		r.Top1 += res.Top1
		r.Top5 += res.Top5
		r.LossSum += res.LossSum
		if len(res.Pred) == n {
			r.Confusion.add(b.Labels[:n], res.Pred)
		}
	}
	r.Wall = time.Since(start)
	return r, nil
}

// newLoaders builds the training loader (random augmentation, shuffled) and
// the validation loader (resize + centre crop, in order).
func newLoaders(cfg config.Config, trainSet, valSet *data.Index, alloc data.Allocator, dtype string, split data.Split) (train, val *data.Loader, err error) {
	a, d := cfg.Augment, cfg.Data
	mean, std := vec3(a.Mean), vec3(a.Std)
	tp := augment.DefaultTrainParams(d.ImageSize)
	tp.Scale, tp.Ratio = [2]float64{a.Scale[0], a.Scale[1]}, [2]float64{a.Ratio[0], a.Ratio[1]}
	tp.HFlip, tp.Brightness, tp.Contrast, tp.Saturation = a.HFlip, a.Brightness, a.Contrast, a.Saturation
	tp.Mean, tp.Std = mean, std
	trainTf, err := augment.NewTrain(tp)
	if err != nil {
		return nil, nil, fmt.Errorf("augment: %w", err)
	}
	ep := augment.DefaultEvalParams(d.ImageSize)
	ep.ResizeRatio, ep.Mean, ep.Std = a.EvalResizeRatio, mean, std
	evalTf, err := augment.NewEval(ep)
	if err != nil {
		return nil, nil, fmt.Errorf("augment: %w", err)
	}
	base := data.LoaderConfig{
		BatchSize: d.BatchSize, Workers: d.Workers, Prefetch: d.Prefetch,
		Seed: cfg.Train.Seed, MaxPixels: d.MaxPixels, SkipBadImages: d.BadImages == "skip", Alloc: alloc, Decoder: d.Decoder, DType: dtype,
		Split: split,
	}
	base.MaxDecodeBytes = int64(d.MaxDecode)
	tc := base
	tc.Index, tc.Transform, tc.Shuffle, tc.DropLast = trainSet, trainTf, d.Shuffle, d.DropLast
	if train, err = data.NewLoader(tc); err != nil {
		return nil, nil, err
	}
	vc := base
	vc.Index, vc.Transform = valSet, evalTf
	if val, err = data.NewLoader(vc); err != nil {
		train.Close()
		return nil, nil, err
	}
	return train, val, nil
}

func allocName(a data.Allocator) string {
	if a == nil {
		return "pageable"
	}
	return a.Name()
}

func vec3(v []float64) [3]float32 { return [3]float32{float32(v[0]), float32(v[1]), float32(v[2])} }

// shellQuote quotes s for a POSIX shell when it holds anything but plain
// path characters, so that a printed command runs as printed.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
