package trainer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"stoke/config"
	"stoke/data"
)

// session is one invocation of Run: what set-up made (here) and the epoch
// loop reads (trainer.go), and what close releases at the end.
type session struct {
	cfg config.Config
	opt Options
	out io.Writer // os.Stdout, opt.Out, or io.Discard on ranks other than 0
	d   *distRun

	dir     string           // the run folder
	runID   string           // the run's id (runIDFile), which its checkpoints record
	start   *checkpointState // the checkpoint resumed from; nil in a fresh run
	sameRun bool             // resuming into the checkpoint's own run folder

	trainSet *data.Index
	files    data.FileList // the dataset's files, as checkpoints record them
	decoder  string        // the JPEG decoder resolved (resolvedDecoder)

	dev                    *Device
	net                    Backend // dev.Backend, or what a test wraps it in; rebuilt when the side changes (sizes.go)
	netSize                int     // the side net is built for
	graphsNoted            bool    // the net's fallback from CUDA Graphs has been printed (noteGraphsFallback)
	evalModel              Backend // the model at data.eval_size when it is not net's side; nil until needed
	trainLoader, valLoader *data.Loader
	metrics                *metricsFile // nil on ranks other than 0
	sched                  schedule
	bar                    *progress
	watch                  *divergenceWatch // the loss's divergence detector (divergence.go)
	auto                   *autoWorkers     // data.workers: auto (autoworkers.go); nil otherwise

	firstEpoch   int
	step         int           // optimizer steps taken
	savedStep    int           // the step of the last checkpoint, written or resumed from
	partial      progressState // of the epoch a resumed checkpoint interrupted
	checkpointed bool          // this invocation wrote a checkpoint

	closers []func() // run last first by close

	deferred []*stepInFlight // started steps whose figures the device still holds (model.Deferred)
}

// onClose adds f to what close runs, before everything added earlier.
func (s *session) onClose(f func()) { s.closers = append(s.closers, f) }

// close releases what set-up took, last first: the loaders before the
// device whose pinned buffers they may hold, the run folder's lock last.
func (s *session) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// setUp readies s to train as cfg says, in order: the checkpoint to resume
// from, the run folder, the dataset, the device and the model on it, the
// loaders, metrics.jsonl. It returns a Summary, and no error, when there is
// nothing to train. Whatever it took is released by s.close, also after an
// error.
func (s *session) setUp(ctx context.Context, cfg config.Config, opt Options) (*Summary, error) {
	s.cfg, s.opt, s.out = cfg, opt, opt.Out
	if s.out == nil {
		s.out = os.Stdout
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid config:\n%w", err)
	}
	s.d = newDistRun(opt.Comm)
	if !s.d.writer() {
		s.out = io.Discard // only rank 0 reports
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
		prev := runtime.GOMAXPROCS(cfg.Train.Threads)
		s.onClose(func() { runtime.GOMAXPROCS(prev) })
	}
	s.dir = cfg.Train.Out
	if cfg.Train.Resume != "" {
		if sum, err := s.findStart(ctx); sum != nil || err != nil {
			return sum, err
		}
	}
	if err := s.claimFolder(); err != nil {
		return nil, err
	}
	if s.start != nil && s.start.Unverified {
		fmt.Fprintf(s.out, "note: %s was written by an older stoke (format 1): its files, decoder and dataset cannot be checked\n", s.start.Dir)
	}
	valSet, err := s.openData(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.openModel(ctx); err != nil {
		return nil, err
	}
	if err := s.openLoaders(valSet); err != nil {
		return nil, err
	}
	if err := s.openMetrics(); err != nil {
		return nil, err
	}
	opt.Trace.Thread(loopRow, "train loop")
	opt.Trace.Thread(modelRow, "model ("+s.dev.Name+")")
	for w := 0; w < maxWorkers(cfg.Data.Workers); w++ {
		opt.Trace.Thread(w+1, fmt.Sprintf("loader worker %d", w))
	}
	s.sched = schedule{cfg: cfg.Optim, stepsPerEpoch: s.trainLoader.NumBatches(), epochs: cfg.Train.Epochs}
	s.bar = newProgress(s.out, cfg.Train.Progress)
	if cfg.Data.Workers.Auto() {
		s.auto = newAutoWorkers(s.bar.Note, cfg.Train.Device, s.valLoader, opt)
	}
	return nil, nil
}

// findStart reads the checkpoint cfg.Train.Resume names and checks that
// this run may continue it; with its epochs all done already, it touches
// nothing and returns the Summary that says so.
func (s *session) findStart(ctx context.Context) (*Summary, error) {
	cfg := s.cfg
	start, err := loadCheckpointState(ctx, cfg.Train.Resume)
	if err != nil {
		return nil, err
	}
	if err := s.d.resumable(start); err != nil {
		return nil, err
	}
	if err := compatible(start, s.d.resumeConfig(cfg)); err != nil {
		return nil, err
	}
	if start.Epoch >= cfg.Train.Epochs { // nothing to do: touch nothing
		fmt.Fprintf(s.out, "nothing to train: the checkpoint %s has %s done and train.epochs is %d; nothing was changed (a larger --epochs continues the run)\n", start.Dir, epochsDone(start), cfg.Train.Epochs)
		return &Summary{RunDir: runOf(cfg.Train.Resume), CheckpointEpochs: start.Epoch}, nil
	}
	s.start, s.sameRun = start, sameFolder(runOf(cfg.Train.Resume), s.dir)
	return nil, nil
}

// claimFolder takes the run folder (rank 0 holds it for every rank). A
// fresh run that ends before its first checkpoint (an error in set-up, an
// interrupt before the first step) takes back the files it wrote there, so
// that the same command can simply be run again.
func (s *session) claimFolder() error {
	if s.d.writer() {
		folder, err := claimRunFolder(s.dir, s.sameRun, s.out)
		if err != nil {
			var used *usedFolderError
			if errors.As(err, &used) && s.start != nil {
				return fmt.Errorf("cannot resume %s into --out %s: that folder holds another run (%s), and the two would be mixed; continue that one with --resume %s, or choose an empty --out", s.cfg.Train.Resume, s.dir, strings.Join(used.Found, ", "), s.dir)
			}
			return err
		}
		s.onClose(folder.release)
		s.onClose(func() {
			if s.start == nil && !s.checkpointed {
				folder.takeBack()
			}
		})
	}
	id, err := readRunID(s.dir)
	switch {
	case err != nil:
		return err
	case s.sameRun && id == "" && s.start.RunID != "":
		id = s.start.RunID // run.json lost: the checkpoints say whose run this is
	case !s.sameRun || id == "":
		id = newRunID() // a fresh run, a resume into a new folder, or a run from before run ids
	}
	s.runID = id
	return nil
}

// openData opens the dataset, checks it against the checkpoint resumed
// from, and writes and prints the resolved config. It returns the
// validation split; the training split is s.trainSet.
func (s *session) openData(ctx context.Context) (valSet *data.Index, err error) {
	cfg, start, out := s.cfg, s.start, s.out
	root, trainSet, valSet, err := s.d.openDataset(ctx, cfg.Data, out)
	if err != nil {
		return nil, err
	}
	if len(trainSet.Classes) < 2 {
		return nil, fmt.Errorf("dataset %s has one class (%s); a classifier needs at least two classes, each a folder of images under train/ and val/", root, trainSet.Classes[0])
	}
	if s.files, err = data.ListFiles(trainSet, valSet); err != nil {
		return nil, err
	}
	s.trainSet, s.decoder = trainSet, resolvedDecoder(cfg.Data.Decoder)
	if start != nil {
		if err := sameInputs(start, root, trainSet.Classes, s.files, hasJPEG(trainSet, valSet), s.decoder, cfg.Data.Decoder); err != nil {
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
	if s.d.writer() {
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return nil, fmt.Errorf("run folder: %w", err)
		}
		if err := writeFileAtomic(filepath.Join(s.dir, "config.yaml"), resolved); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(out, "# resolved config (saved in %s)\n%s", filepath.Join(s.dir, "config.yaml"), resolved)
	kind := ""
	if trainSet.Shards != nil {
		kind = fmt.Sprintf(" tar shards (%d train, %d val),", len(trainSet.Shards), len(valSet.Shards))
	}
	fmt.Fprintf(out, "dataset %s:%s %d classes, %d train / %d val images\n", root, kind, len(trainSet.Classes), len(trainSet.Samples), len(valSet.Samples))
	return valSet, nil
}

// openModel opens the device and builds the model on it, with the weights
// and optimizer state resumed from, or broadcast from rank 0.
func (s *session) openModel(ctx context.Context) error {
	cfg, start, out := s.cfg, s.start, s.out
	first := 0
	if start != nil {
		first = start.Epoch // the side of the epoch resumed (data.progressive)
	}
	s.netSize = cfg.TrainSize(first)
	dev, err := openDevice(cfg.ModelSpecAt(len(s.trainSet.Classes), s.netSize), cfg.ModelOptions(), cfg, out)
	if err != nil {
		return err
	}
	if dev.Close != nil {
		s.onClose(func() { dev.Close() }) // after the loaders, whose buffers it may own
	}
	if err := ctx.Err(); err != nil { // interrupted while the model was built
		return err
	}
	s.dev, s.net = dev, dev.Backend
	if s.opt.wrapBackend != nil {
		s.net = s.opt.wrapBackend(s.net)
	}
	s.onClose(s.d.close)                // NCCL's communicator, after the net
	s.onClose(func() { s.net.Close() }) // the one net is then (sizes.go rebuilds it)
	s.onClose(func() {
		if s.evalModel != nil {
			s.evalModel.Close()
		}
	})
	if start != nil {
		if err := s.net.Load(start.Params, start.Optim); err != nil {
			return fmt.Errorf("resume from %s: %w", start.Dir, err)
		}
		s.firstEpoch, s.step, s.partial = start.Epoch, start.Step, s.d.ownShare(start.Partial)
		s.savedStep = s.step
		fmt.Fprintf(out, "resumed from %s: %d epochs and %d batches done (step %d)\n", start.Dir, start.Epoch, s.partial.Batches, start.Step)
	}
	fmt.Fprintf(out, "model: %d parameters\n", dev.Params)
	return s.d.setup(s.net, cfg, replica{Classes: s.trainSet.Classes, Files: s.files, Decoder: s.decoder, Epoch: s.firstEpoch, Step: s.step}, out)
}

// maxHeldPoolBytes is the most batch memory minPool adds buffers up to.
const maxHeldPoolBytes = 512 << 20

// minPool is the fewest batch buffers the training loader keeps: on a
// device backend that keeps a non_blocking step's buffer until its copy is
// done (cudaops.Backend.HeldBatches), one more than it keeps, so that the
// host waits for the device only when the backend reads its results, as
// long as that many buffers of dtype batches at the largest training side
// fit in maxHeldPoolBytes; else 0: the loader's own pool, and the backend
// waits for each batch's copy (trainSteps).
func (s *session) minPool(dtype string) int {
	h, ok := s.net.(batchHolder)
	if !ok || !s.cfg.Train.NonBlocking || s.d.parallel() { // a data-parallel step waits for its gradients anyway
		return 0
	}
	side := int64(s.cfg.MaxTrainSize())
	bytes := int64(s.cfg.Data.BatchSize) * 3 * side * side
	if dtype != data.DTypeUint8 {
		bytes *= 4
	}
	want := h.HeldBatches() + 1
	if int64(want)*bytes > maxHeldPoolBytes {
		return 0
	}
	return want
}

// openLoaders makes the training and validation loaders and checks that the
// epochs they make are the resumed checkpoint's.
func (s *session) openLoaders(valSet *data.Index) error {
	cfg, start := s.cfg, s.start
	dtype := s.dev.batchDType(cfg.Data.BatchDType)
	trainLoader, valLoader, err := newLoaders(cfg, s.trainSet, valSet, s.dev.Alloc, dtype, s.d.split(), s.minPool(dtype))
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "loader: %s, %s, %s batches in %s memory\n", workersLine(cfg.Data.Workers), decodersLine(trainLoader.DecoderName(), s.trainSet, valSet), trainLoader.DType(), allocName(s.dev.Alloc))
	if cfg.SizesVary() {
		fmt.Fprintln(s.out, sidesLine(cfg))
	}
	s.onClose(func() { trainLoader.Close() })
	s.onClose(func() { valLoader.Close() })
	s.trainLoader, s.valLoader = trainLoader, valLoader
	steps := trainLoader.NumBatches()
	if start != nil && !start.Unverified && start.StepsPerEpoch != steps {
		return fmt.Errorf("cannot resume from %s: its epochs had %d steps, this run's have %d", start.Dir, start.StepsPerEpoch, steps)
	}
	if start != nil && start.Step != start.Epoch*steps+start.Partial.Batches {
		return fmt.Errorf("resume: %s is inconsistent: step %d, but %d epochs of %d steps and %d batches make %d", filepath.Join(start.Dir, stateFile), start.Step, start.Epoch, steps, start.Partial.Batches, start.Epoch*steps+start.Partial.Batches)
	}
	return nil
}

// openMetrics opens metrics.jsonl (rank 0): a resume into a new folder takes
// the run's earlier epochs along.
func (s *session) openMetrics() error {
	if !s.d.writer() {
		return nil
	}
	if s.start != nil && !s.sameRun {
		if b, err := os.ReadFile(filepath.Join(runOf(s.cfg.Train.Resume), "metrics.jsonl")); err == nil {
			if err := writeFileAtomic(filepath.Join(s.dir, "metrics.jsonl"), b); err != nil {
				return err
			}
		}
	}
	m, err := openMetrics(s.dir, s.firstEpoch)
	if err != nil {
		return err
	}
	s.metrics = m
	s.onClose(func() { m.Close() })
	return nil
}

// newLoaders builds the training loader (random augmentation, shuffled; at
// the first epoch's side, its buffers for the largest training side: the
// epoch loop sets each epoch's, sizes.go) and the validation loader
// (resize + centre crop, in order, at the evaluation side).
func newLoaders(cfg config.Config, trainSet, valSet *data.Index, alloc data.Allocator, dtype string, split data.Split, minPool int) (train, val *data.Loader, err error) {
	d := cfg.Data
	trainTf, err := trainTransform(cfg, cfg.TrainSize(0))
	if err != nil {
		return nil, nil, err
	}
	evalTf, err := evalTransform(cfg) // the one predict's evalSampler uses too
	if err != nil {
		return nil, nil, err
	}
	base := data.LoaderConfig{
		BatchSize: d.BatchSize, Workers: startWorkers(d.Workers), Prefetch: d.Prefetch,
		Seed: cfg.Train.Seed, MaxPixels: d.MaxPixels, SkipBadImages: d.BadImages == "skip", Alloc: alloc, Decoder: d.Decoder, DType: dtype,
		Split: split,
	}
	base.MaxDecodeBytes = int64(d.MaxDecode)
	tc := base
	tc.Index, tc.Transform, tc.Shuffle, tc.DropLast = trainSet, trainTf, d.Shuffle, d.DropLast
	tc.ShuffleBuffer = d.ShuffleBuf       // sequential mode (shards only)
	tc.MinSlice = cfg.BatchNormMinSlice() // no BatchNorm over 1 value per channel (docs/config.md)
	tc.MaxSize = cfg.MaxTrainSize()
	tc.MinPool = minPool
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
