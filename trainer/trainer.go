// Package trainer is stoke's training loop: it wires a dataset, the loader,
// the transforms and the model together, and owns what a run leaves behind —
// progress on the terminal, metrics.jsonl, the resolved config, the
// checkpoints that --resume continues from exactly (also from the middle of
// an epoch, after an interrupt), and a trace-event timeline.
//
// Run is set-up (setup.go: a session) then the epoch loop (here), which
// reads top to bottom: an epoch is trainEpoch — per batch: wait for it,
// start its step (the copy), finish the step in flight (the compute),
// record —, then evaluate, then record and checkpoint. Time is split into
// waiting for data (blocked in the loader), copying to the device and
// computing, so a starved model shows; trainResult keeps an epoch's tallies.
//
// device.go is the seam to where the compute happens: a Backend (the CPU
// model, or the CUDA backend of a stokecuda build, device_cuda.go) that
// starts a step on a float32 or uint8 batch and hands back a Pending to
// wait on for its result and times — still queued on a GPU, so that step N
// computes while batch N+1 is fetched and copied — and the allocator its
// batch buffers come from.
package trainer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"strings"
	"time"

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

	autoChoose func(data.WorkerMeasure) data.WorkerChoice // tests: data.workers auto's rule in place of data.ChooseWorkers
	autoSteps  int                                        // tests: the steps auto measures in each phase, in place of autoMeasureSteps
}

// Summary is what a finished run reports.
type Summary struct {
	RunDir string
	Epochs []EpochMetrics // this invocation's epochs
	// CheckpointEpochs is, for a resume with nothing left to train, the
	// epochs its checkpoint has.
	CheckpointEpochs int
}

// Run trains as cfg says: it resumes from cfg.Train.Resume when set, writes a
// checkpoint after every epoch, and returns when all epochs are done, ctx is
// cancelled, or something fails.
func Run(ctx context.Context, cfg config.Config, opt Options) (*Summary, error) {
	s := &session{}
	defer s.close()
	if sum, err := s.setUp(ctx, cfg, opt); sum != nil || err != nil {
		return sum, err // nothing to train, or set-up failed
	}
	sum := &Summary{RunDir: s.dir}
	for epoch := s.firstEpoch; epoch < cfg.Train.Epochs; epoch++ {
		m, err := s.epoch(ctx, epoch)
		if err != nil {
			return sum, err
		}
		sum.Epochs = append(sum.Epochs, m)
		if opt.AfterEpoch != nil && !opt.AfterEpoch(m) {
			break
		}
	}
	if s.d.writer() {
		return sum, writeConfusionPNG(s.dir) // eval/confusion.png of the last evaluation
	}
	return sum, nil
}

// epoch trains epoch (from where an interrupted run left it), evaluates
// it, and records and checkpoints it.
func (s *session) epoch(ctx context.Context, epoch int) (EpochMetrics, error) {
	t0 := time.Now()
	tr := trainResult{progressState: s.partial, counters: s.dev.Counters}
	s.partial = progressState{}
	if err := s.sizeEpoch(epoch); err != nil {
		return EpochMetrics{}, err
	}
	if err := s.trainEpoch(ctx, epoch, &tr); err != nil {
		return EpochMetrics{}, s.stopped(ctx, err, epoch, tr.progressState, false)
	}
	if err := s.d.reduceTrain(&tr); err != nil {
		return EpochMetrics{}, err
	}
	t1 := time.Now()
	net, err := s.evalNet()
	if err != nil {
		return EpochMetrics{}, err
	}
	ev, err := evaluate(ctx, net, s.valLoader, epoch)
	if err == nil {
		err = s.d.reduceEval(&ev, len(s.trainSet.Classes))
	}
	if err != nil {
		return EpochMetrics{}, s.stopped(ctx, err, epoch, tr.progressState, true)
	}
	s.opt.Trace.Span(modelRow, "eval", fmt.Sprintf("evaluate epoch %d", epoch+1), t1, time.Now(), nil)
	return s.record(epoch, tr, ev, t0)
}

// trainEpoch runs one pass over the training set: wait for a batch, start
// its step (the copy; on the CPU the compute too), finish the step before
// it, record. It starts after r.Batches batches (the part an interrupted
// run already did) and stops between two steps when ctx is cancelled, with
// every step it started finished.
//
// A step on the GPU is still queued when Start returns (Pending.Queued):
// step N computes while batch N+1 is fetched and its copy started, the
// overlap that non_blocking buys. At most one step waits. A backend that
// keeps a step's loss on its device (model.Deferred) hands back its
// figures later: the loop records them when the progress bar would show
// them, and at the epoch's end, however it ends (before any checkpoint);
// a non-finite loss then stops the run naming its step, as at once.
func (s *session) trainEpoch(ctx context.Context, epoch int, r *trainResult) error {
	it := s.trainLoader.Epoch(ctx, epoch)
	defer it.Close()
	s.bar.EpochStart(epoch, s.sched.epochs, s.trainLoader.NumBatches())
	r.begin()
	defer r.end() // after the flush: its steps, its time and its wait count
	err := s.trainSteps(ctx, it, epoch, r)
	return firstErr(s.flush(epoch, r), err)
}

// batchHolder is a device backend that may keep a non_blocking step's
// batch buffer (Input.Release) until its copy is done, at most
// HeldBatches of them (cudaops.Backend).
type batchHolder interface{ HeldBatches() int }

// trainSteps is trainEpoch's loop; steps it leaves deferred are flushed by
// trainEpoch.
func (s *session) trainSteps(ctx context.Context, it *data.Iter, epoch int, r *trainResult) error {
	var queued *stepInFlight // started, not yet finished
	// A device backend that may keep batch buffers until their copies are
	// done (cudaops.Backend.HeldBatches) gets them only when the loader has
	// more than it keeps, so that the loader always has one to fill.
	h, ok := s.net.(batchHolder)
	hold := ok && s.trainLoader.PoolSize() > h.HeldBatches()
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return firstErr(s.finish(epoch, r, queued), err)
		}
		if err := s.auto.before(it); err != nil { // data.workers: auto may switch its workers here
			return firstErr(s.finish(epoch, r, queued), err)
		}
		t0 := time.Now()
		b, err := it.Next() // wait for data
		if err == io.EOF {
			return s.finish(epoch, r, queued)
		}
		if err != nil {
			return firstErr(s.finish(epoch, r, queued), err)
		}
		if i < r.Batches { // done before the interruption: same batch, already learnt
			b.Release()
			r.begin() // this invocation's figures start after the skipped batches
			continue
		}
		t1 := time.Now()
		s.auto.after(b)
		r.skipped(b, s.trainLoader.Index())
		st := &stepInFlight{batch: b.Info(), step: s.step, lr: s.sched.lr(s.step), waited: t1.Sub(t0), started: t1}
		in := input(b)
		if hold {
			in.Release = b.Release // once its copy is done, without a wait here
		}
		st.pending, err = s.net.Start(in, float32(st.lr)) // copy (and compute, on the CPU)
		if !hold || err != nil {
			b.Release() // the step has its own copy of the batch now
		}
		if err != nil {
			return fmt.Errorf("epoch %d step %d: %w", epoch+1, st.step, err)
		}
		s.step++
		if err := s.finish(epoch, r, queued); err != nil { // compute: the step before this one
			return err
		}
		queued = nil
		if st.pending.Queued() {
			queued = st
		} else if err := s.finish(epoch, r, st); err != nil {
			return err
		}
	}
}

// finish waits for a started step (nil: none) and records it: in the
// epoch's tallies, on the timeline and on the progress bar.
func (s *session) finish(epoch int, r *trainResult, st *stepInFlight) error {
	if st == nil {
		return nil
	}
	res, times, err := st.pending.Wait()
	if err == nil && res.Deferred {
		s.deferred = append(s.deferred, st)
		if s.bar.due(len(s.deferred)) {
			return s.flush(epoch, r)
		}
		return nil
	}
	return s.recordStep(epoch, r, st, res, times, err)
}

// flush records the steps whose figures a device kept (model.Deferred), in
// order, as finish records a step.
func (s *session) flush(epoch int, r *trainResult) error {
	if len(s.deferred) == 0 {
		return nil
	}
	steps := s.deferred
	s.deferred = s.deferred[:0]
	d, ok := s.net.(model.Deferred)
	if !ok {
		return fmt.Errorf("epoch %d step %d: the step's result was deferred by a backend that cannot report it", epoch+1, steps[0].step)
	}
	out, err := d.Results()
	if err != nil {
		return fmt.Errorf("epoch %d step %d: %w", epoch+1, steps[0].step, err)
	}
	for i, o := range out {
		if i == len(steps) {
			break
		}
		if err := s.recordStep(epoch, r, steps[i], o.Result, o.Times, o.Err); err != nil {
			return err
		}
	}
	if len(out) != len(steps) {
		return fmt.Errorf("epoch %d step %d: the backend reported %d results for %d steps", epoch+1, steps[0].step, len(out), len(steps))
	}
	return nil
}

// recordStep records a finished step (its result, times and error).
func (s *session) recordStep(epoch int, r *trainResult, st *stepInFlight, res model.StepResult, times model.StepTimes, err error) error {
	end := time.Now()
	if err == nil && (math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0)) {
		err = fmt.Errorf("%w: %v", model.ErrNonFiniteLoss, res.Loss)
	}
	if errors.Is(err, model.ErrNonFiniteLoss) {
		return fmt.Errorf("epoch %d step %d: %v (learning rate %.4g); training stopped, the last good checkpoint is kept: lower optim.lr or check the data", epoch+1, st.step, err, st.lr)
	}
	if err != nil {
		return fmt.Errorf("epoch %d step %d: %w", epoch+1, st.step, err)
	}
	r.add(st, res, times)
	traceStep(s.opt.Trace, st, end, times, res.Loss)
	if err := s.watchLoss(epoch, r, st, res.Loss); err != nil {
		return err
	}
	s.bar.Step(r.meanLoss(), r.accuracy(), r.imagesPerSecond(), st.lr)
	if s.opt.afterStep != nil {
		s.opt.afterStep(st.step + 1)
	}
	return nil
}

// record writes an epoch's confusion matrix, metrics line and checkpoint,
// keeps the best one, and prints the epoch's line.
func (s *session) record(epoch int, tr trainResult, ev evalResult, t0 time.Time) (EpochMetrics, error) {
	if s.d.writer() {
		if err := writeConfusion(s.dir, epoch+1, s.trainSet.Classes, ev.Confusion); err != nil {
			return EpochMetrics{}, err
		}
	}
	m := epochMetrics(epoch, s.cfg.Train.Epochs, tr, ev, time.Since(t0), s.sched.lr(s.step-1))
	m.Workers, m.AutoWorkers = s.trainLoader.Workers(), s.auto.taken()
	m.ImageSize, m.EvalSize, m.showSizes = s.netSize, s.cfg.EvalImageSize(), s.cfg.SizesVary()
	if s.metrics != nil {
		if err := s.metrics.Write(m); err != nil {
			return EpochMetrics{}, err
		}
	}
	dir, err := s.save(epoch+1, progressState{})
	if err != nil {
		return EpochMetrics{}, err
	}
	m.Checkpoint = dir
	if s.d.writer() {
		if _, err := keepBest(s.dir, dir, epoch+1, m.ValTop1); err != nil {
			return EpochMetrics{}, err
		}
	}
	// Collect the epoch's garbage (mostly the checkpoint's copies) now,
	// at a boundary, and hand freed pages back to the OS, so that the
	// footprint stays flat from epoch to epoch instead of creeping up to
	// the collector's next goal (costs a few ms an epoch).
	debug.FreeOSMemory()
	s.bar.EpochDone(m)
	s.noteGraphsFallback()
	s.d.epochDone(s.out)
	return m, nil
}

// graphsFallback is a Backend whose steps may stop replaying CUDA Graphs
// (cudaops.Backend under cuda.graphs auto, after a capture the driver
// refused): GraphsFallback says why, "" until then.
type graphsFallback interface {
	GraphsFallback() string
}

// noteGraphsFallback prints, once, after the epoch in which it happened,
// that the steps launch kernel by kernel and why.
func (s *session) noteGraphsFallback() {
	g, ok := s.net.(graphsFallback)
	if !ok || s.graphsNoted {
		return
	}
	if why := g.GraphsFallback(); why != "" {
		s.graphsNoted = true
		fmt.Fprintf(s.out, "cuda.graphs %s: %s; the steps launch kernel by kernel from then on (the same weights, more launches)\n", s.cfg.Cuda.Graphs, why)
	}
}

// save writes a checkpoint (rank 0) after epochsDone epochs and p of the
// next one, and returns its folder.
func (s *session) save(epochsDone int, p progressState) (string, error) {
	if !s.d.writer() {
		s.savedStep = s.step
		return "", nil
	}
	params, optim, err := s.net.State()
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	dir, err := saveCheckpoint(s.dir, checkpointState{
		RunID: s.runID, Epoch: epochsDone, Step: s.step, StepsPerEpoch: s.trainLoader.NumBatches(), Partial: p, Config: s.d.checkpointConfig(s.cfg),
		Classes: s.trainSet.Classes, Decoder: s.decoder, Dataset: s.files,
		Params: params, Optim: optim,
	}, s.cfg.Train.KeepCkpts)
	if err == nil {
		s.checkpointed, s.savedStep = true, s.step
	}
	return dir, err
}

// stopped is what Run returns for err, which stopped epoch part-way, done
// of its training done (all of it when evaluating). Only an interrupt
// (ctx cancelled) leaves a state worth a checkpoint — a failed step (a NaN
// loss, say) does not — so for one it writes a checkpoint of where the run
// stopped, or names the last one when nothing happened since, and returns
// an InterruptedError that says how to resume.
func (s *session) stopped(ctx context.Context, err error, epoch int, done progressState, evaluating bool) error {
	if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return err
	}
	where := "in"
	switch {
	case evaluating: // the epoch's training is done, on every rank: keep it
		where = "while evaluating"
	case s.d.parallel(): // ranks stop at different steps: keep the last epoch's checkpoint
		return err
	case s.step == s.savedStep: // nothing new since the last checkpoint
		if dir, ok := latestCheckpoint(s.dir); ok {
			return &InterruptedError{Checkpoint: dir, Run: s.dir, Err: err}
		}
		return err
	}
	dir, serr := s.save(epoch, done)
	if serr != nil { // not wrapping err: this is a failure, not an interrupt with nothing to keep
		return fmt.Errorf("interrupted %s epoch %d, and its checkpoint could not be written: %w", where, epoch+1, serr)
	}
	return &InterruptedError{Checkpoint: dir, Run: s.dir, Err: err}
}

// firstErr is the first of errs that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
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

// trainResult is one epoch's training half: its tallies. Its
// progressState covers the whole epoch, also the part an interrupted run
// did; the times and ImagesNow only this invocation's part of it.
type trainResult struct {
	progressState
	ImagesNow     int           // images trained in this invocation
	Wait          time.Duration // blocked in the loader
	Copy, Compute time.Duration // as the backend measures them (model.StepTimes)
	Wall          time.Duration
	Skipped       []string  // images that could not be decoded (bad_images: skip)
	start         time.Time // of this invocation's part
	stepsNow      int       // steps finished in this invocation's part
	counters      func() (DriverCounts, bool)
	c0            DriverCounts
	c0ok          bool
	gpu           *GPUCounters // the driver calls per step of this part (cuda)
}

// begin starts (or, after batches an interrupted run did, restarts) the
// clock of this invocation's part; end stops it.
func (r *trainResult) begin() {
	r.start, r.stepsNow = time.Now(), 0
	if r.counters != nil {
		r.c0, r.c0ok = r.counters()
	}
}

func (r *trainResult) end() {
	r.Wall = time.Since(r.start)
	if r.counters != nil {
		c1, ok := r.counters()
		r.gpu = perStep(r.c0, c1, r.c0ok, ok, r.stepsNow)
	}
}

// add counts a finished step.
func (r *trainResult) add(st *stepInFlight, res model.StepResult, t model.StepTimes) {
	r.Wait += st.waited
	r.Copy += t.Copy
	r.Compute += t.Compute
	r.Batches++
	r.stepsNow++
	r.Images += st.batch.N
	r.ImagesNow += st.batch.N
	r.Correct += res.Correct
	r.LossSum += res.Loss * float64(st.batch.N)
}

// skipped lists the images the loader left out of b.
func (r *trainResult) skipped(b *data.Batch, index *data.Index) {
	for _, idx := range b.Skipped {
		r.Skipped = append(r.Skipped, index.Samples[idx].Path)
	}
}

// The running figures the progress bar shows.
func (r *trainResult) meanLoss() float64 { return r.LossSum / float64(r.Images) }
func (r *trainResult) accuracy() float64 { return float64(r.Correct) / float64(r.Images) }
func (r *trainResult) imagesPerSecond() float64 {
	return float64(r.ImagesNow) / time.Since(r.start).Seconds()
}

// stepInFlight is a training step started and not yet recorded.
type stepInFlight struct {
	batch   data.BatchInfo
	step    int
	lr      float64
	waited  time.Duration // blocked in the loader for its batch
	started time.Time
	pending model.Pending
}

// Rows of the timeline.
const (
	loopRow  = 0  // the train loop, waiting for data
	modelRow = 99 // the model's steps
)

// traceStep puts one training step on the timeline: the batch being built
// (on its worker's row, or inside the wait when loading inline), the wait,
// and the step with its copy and compute.
func traceStep(tr *trace.Recorder, s *stepInFlight, end time.Time, t model.StepTimes, loss float64) {
	if tr == nil {
		return
	}
	copyTime, computeTime := t.Copy, t.Compute
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
func evaluate(ctx context.Context, net Backend, loader *data.Loader, epoch int) (evalResult, error) {
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
		res, err := net.Eval(input(b))
		if err != nil {
			b.Release()
			return r, fmt.Errorf("evaluation: %w", err)
		}
		r.Images += n
		r.Top1 += res.Top1
		r.Top5 += res.Top5
		r.LossSum += res.LossSum
		if len(res.Pred) == n {
			r.Confusion.add(b.Labels[:n], res.Pred)
		}
		b.Release() // after its labels are read: the loader refills a released batch
	}
	r.Wall = time.Since(start)
	return r, nil
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
