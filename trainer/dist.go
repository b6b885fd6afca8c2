package trainer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"stoke/config"
	"stoke/data"
	"stoke/dist"
	"stoke/model"
)

// Data-parallel training over a dist.Comm (docs/distributed.md). Every rank
// runs this same loop on its slice of each global batch (data.Split), with
// a model that rank 0's weights were broadcast into; between backward and
// the update the gradients are summed across ranks (gradSync, in buckets
// started as backward produces them), weighted by each rank's sample count,
// so that every rank takes the step one process would take on the whole
// global batch. Only rank 0 writes: run folder, metrics, checkpoints and
// progress; the epoch figures it writes are the sums over all ranks.

// distRun is one rank's part in a data-parallel run; with a world of one
// it changes nothing.
type distRun struct {
	comm dist.Comm
	sync *gradSync // nil with one rank
}

func newDistRun(comm dist.Comm) *distRun {
	if comm == nil {
		comm = dist.Single{}
	}
	return &distRun{comm: comm}
}

func (d *distRun) ranks() int     { return d.comm.Size() }
func (d *distRun) parallel() bool { return d.comm.Size() > 1 }

// writer: only rank 0 writes the run folder and prints progress.
func (d *distRun) writer() bool { return d.comm.Rank() == 0 }

func (d *distRun) split() data.Split {
	if !d.parallel() {
		return data.Split{}
	}
	return data.Split{Rank: d.comm.Rank(), Ranks: d.comm.Size()}
}

// openDataset opens the dataset on rank 0 first and on the others after:
// a generated dataset is then made once, by rank 0, in a shared cache.
func (d *distRun) openDataset(ctx context.Context, cfg config.Data, out io.Writer) (root string, train, val *data.Index, err error) {
	if !d.parallel() {
		return openDataset(ctx, cfg, out)
	}
	if !d.writer() {
		if err := d.comm.Barrier(); err != nil {
			return "", nil, nil, fmt.Errorf("waiting for rank 0's dataset: %w", err)
		}
	}
	root, train, val, err = openDataset(ctx, cfg, out)
	if d.writer() {
		// Even after an error: the others are waiting (the error ends the job).
		if berr := d.comm.Barrier(); berr != nil && err == nil {
			err = berr
		}
	}
	return root, train, val, err
}

// gradSyncer is a backend whose training step takes a model.GradSync: the
// CPU model, and the CUDA backend, which hands it host copies of the
// gradients. It stays beside the Backend seam, not in it: only a
// data-parallel run asks for it, once, at set-up.
type gradSyncer interface {
	SetGradSync(model.GradSync)
	GradSizes() []int // the gradients' lengths, in the GradSync's order
}

// setup makes net a replica: rank 0's weights and optimizer state (fresh,
// or resumed) are broadcast to every rank, as DDP does at construction, and
// its training steps sum gradients across ranks.
func (d *distRun) setup(net Backend, cfg config.Config, out io.Writer) error {
	if !d.parallel() {
		return nil
	}
	gs, ok := net.(gradSyncer)
	if !ok {
		return fmt.Errorf("train.dist %s on device %s: this backend takes no gradient hook, so it cannot train data-parallel", cfg.Train.Dist, cfg.Train.Device)
	}
	if cfg.Train.Dist == dist.KindNCCL {
		return fmt.Errorf("train.dist nccl: summing gradients on the GPUs with NCCL is not wired in yet (see docs/distributed.md); use train.dist mpi: on --device cuda it sums host copies of the gradients over MPI")
	}
	params, optim, err := net.State()
	if err != nil {
		return err
	}
	for _, ts := range [][]model.NamedTensor{params, optim} {
		for _, t := range ts {
			if err := d.comm.Broadcast(t.Data, 0); err != nil {
				return fmt.Errorf("broadcasting rank 0's %s: %w", t.Name, err)
			}
		}
	}
	if err := net.Load(params, optim); err != nil {
		return fmt.Errorf("loading rank 0's weights: %w", err)
	}
	// The gradients only: params also holds the BatchNorm buffers, which
	// are broadcast above but not summed.
	d.sync = newGradSync(d.comm, gs.GradSizes(), int(cfg.Train.DistBucketMB*(1<<20)))
	gs.SetGradSync(d.sync)
	fmt.Fprintf(out, "data parallel: %d ranks over %s; global batch %d = %d per rank; gradients in %d bucket(s) of <= %.0f MB\n",
		d.ranks(), d.comm.Name(), cfg.Data.BatchSize*d.ranks(), cfg.Data.BatchSize, len(d.sync.buckets), cfg.Train.DistBucketMB)
	return nil
}

// checkpointConfig is the config a checkpoint records: with the global
// batch (data.batch_size × ranks) as its batch size, so that it resumes on
// any number of ranks that keeps the global batch (1 rank × 64 from 2 × 32).
func (d *distRun) checkpointConfig(cfg config.Config) config.Config {
	cfg.Data.BatchSize *= d.ranks()
	return cfg
}

// resumeConfig is cfg as a checkpoint would record it, to compare with one.
func (d *distRun) resumeConfig(cfg config.Config) config.Config { return d.checkpointConfig(cfg) }

// ownShare is this rank's share of an interrupted epoch's figures (a
// one-process checkpoint resumed on several ranks): rank 0 carries them,
// the others start from zero, so that the epoch's sum counts them once.
func (d *distRun) ownShare(p progressState) progressState {
	if d.writer() {
		return p
	}
	return progressState{Batches: p.Batches}
}

// reduceTrain sums the epoch's training figures over the ranks (the
// timings stay rank 0's).
func (d *distRun) reduceTrain(r *trainResult) error {
	if !d.parallel() {
		return nil
	}
	v := []float64{float64(r.Images), float64(r.Correct), r.LossSum}
	if err := d.comm.AllreduceSumFloat64(v); err != nil {
		return fmt.Errorf("summing the epoch's figures: %w", err)
	}
	r.Images, r.Correct, r.LossSum = int(v[0]), int(v[1]), v[2]
	return nil
}

// reduceEval sums the shards of an evaluation, its confusion matrix (of
// classes rows and columns) too: every rank takes part, also one whose
// shard was empty, so the collectives match.
func (d *distRun) reduceEval(r *evalResult, classes int) error {
	if !d.parallel() {
		return nil
	}
	v := make([]float64, 4+classes*classes)
	v[0], v[1], v[2], v[3] = float64(r.Images), float64(r.Top1), float64(r.Top5), r.LossSum
	for y, row := range r.Confusion {
		for p, n := range row {
			v[4+y*classes+p] = float64(n)
		}
	}
	if err := d.comm.AllreduceSumFloat64(v); err != nil {
		return fmt.Errorf("summing the evaluation: %w", err)
	}
	r.Images, r.Top1, r.Top5, r.LossSum = int(v[0]), int(v[1]), int(v[2]), v[3]
	var c confusion
	for y := range classes {
		for p := range classes {
			if n := int(v[4+y*classes+p]); n > 0 {
				c.addN(int32(y), int32(p), n)
			}
		}
	}
	r.Confusion = c
	return nil
}

// epochDone prints the epoch's communication figures (rank 0's) and
// starts counting afresh.
func (d *distRun) epochDone(out io.Writer) {
	if d.sync == nil {
		return
	}
	s := d.sync.takeStats()
	if s.Steps == 0 {
		return
	}
	fmt.Fprintf(out, "  allreduce: %.2f ms/step of communication, %.2f ms/step waited after backward, %.0f%% overlapped backward (%d steps, %d buckets, %.2f MB/step)\n",
		s.SpanMS/float64(s.Steps), s.ExposedMS/float64(s.Steps), 100*s.Overlap(), s.Steps, len(d.sync.buckets), float64(4*d.sync.floats)/(1<<20))
}

// CommStats are a run's gradient-communication timings: the span from the
// first bucket's start to the last one's end, and the part of it spent
// waiting after backward had finished (not overlapped).
type CommStats struct {
	Steps     int
	SpanMS    float64
	ExposedMS float64
}

// Overlap is the share of the communication span that ran while backward
// was still running.
func (s CommStats) Overlap() float64 {
	if s.SpanMS <= 0 {
		return 0
	}
	return max(0, 1-s.ExposedMS/s.SpanMS)
}

// gradSync is the model.GradSync of a data-parallel run. Parameters are
// packed, last first (the order backward produces them, as PyTorch DDP
// buckets them), into buckets of about capBytes; a bucket's allreduce
// starts once all its gradients are in and every bucket before it has
// started (so every rank starts the same collectives in the same order).
// Each rank adds n·g (n its samples in the step) and one more float, n, to
// the first bucket; after the sum every gradient is divided by the total n:
// the mean gradient over the global batch, as one process computes it,
// also when the ranks' slices differ in size (a short last batch).
type gradSync struct {
	comm    dist.Comm
	buckets []*bucket
	where   []slot // parameter i's place
	floats  int

	mu      sync.Mutex
	n       float32
	next    int // bucket to start next
	grads   [][]float32
	t0      time.Time // first bucket started
	failure error
	stats   CommStats
}

type slot struct{ bucket, off int }

type bucket struct {
	buf     []float32
	params  []int
	pending int
	req     dist.Request
}

func newGradSync(comm dist.Comm, sizes []int, capBytes int) *gradSync {
	s := &gradSync{comm: comm, where: make([]slot, len(sizes)), grads: make([][]float32, len(sizes))}
	var cur *bucket
	for i := len(sizes) - 1; i >= 0; i-- {
		if cur == nil || (4*len(cur.buf) >= capBytes && len(cur.params) > 0) {
			cur = &bucket{}
			s.buckets = append(s.buckets, cur)
		}
		s.where[i] = slot{len(s.buckets) - 1, len(cur.buf)}
		cur.buf = append(cur.buf, make([]float32, sizes[i])...)
		cur.params = append(cur.params, i)
		s.floats += sizes[i]
	}
	s.buckets[0].buf = append(s.buckets[0].buf, 0) // the sample count
	s.floats++
	return s
}

func (s *gradSync) Begin(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n, s.next, s.failure = float32(n), 0, nil
	for _, b := range s.buckets {
		b.pending, b.req = len(b.params), nil
	}
	b0 := s.buckets[0].buf
	b0[len(b0)-1] = s.n
}

func (s *gradSync) Ready(i int, g []float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.where[i]
	b := s.buckets[w.bucket]
	dst := b.buf[w.off : w.off+len(g)]
	for j, v := range g {
		dst[j] = v * s.n
	}
	s.grads[i] = g
	b.pending--
	s.startReady(false)
}

// startReady starts, in order, the buckets whose gradients are all in (all
// the remaining ones when all is set).
func (s *gradSync) startReady(all bool) {
	for s.next < len(s.buckets) && (all || s.buckets[s.next].pending == 0) {
		b := s.buckets[s.next]
		if s.next == 0 {
			s.t0 = time.Now()
		}
		s.next++
		if s.failure != nil {
			continue
		}
		if b.req, s.failure = s.comm.StartAllreduceSum(b.buf); s.failure != nil {
			b.req = nil
		}
	}
}

func (s *gradSync) Wait() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := time.Now() // backward is done
	s.startReady(true)
	err := s.failure
	for _, b := range s.buckets {
		if b.req != nil {
			err = errors.Join(err, b.req.Wait())
		}
	}
	if err != nil {
		return err
	}
	t1 := time.Now()
	s.stats.Steps++
	s.stats.SpanMS += float64(t1.Sub(s.t0)) / 1e6
	s.stats.ExposedMS += float64(t1.Sub(tb)) / 1e6
	b0 := s.buckets[0].buf
	total := b0[len(b0)-1]
	if !(total > 0) || math.IsInf(float64(total), 0) {
		return fmt.Errorf("the ranks' sample counts sum to %v", total)
	}
	for i, g := range s.grads {
		if g == nil {
			continue
		}
		w := s.where[i]
		src := s.buckets[w.bucket].buf[w.off : w.off+len(g)]
		for j, v := range src {
			g[j] = v / total
		}
		s.grads[i] = nil
	}
	return nil
}

func (s *gradSync) takeStats() CommStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	s.stats = CommStats{}
	return st
}
