package trainer

import (
	"context"
	"fmt"
	"io"
	"strings"

	"stoke/config"
	"stoke/data"
	"stoke/dist"
	"stoke/model"
)

// Data-parallel training over a dist.Comm (docs/distributed.md). Every rank
// runs this same loop on its slice of each global batch (data.Split), with
// a model that rank 0's weights were broadcast into; between backward and
// the update the gradients are summed across ranks (dist.Buckets, started
// as backward produces them), weighted by each rank's sample count, so that
// every rank takes the step one process would take on the whole global
// batch. Only rank 0 writes: run folder, metrics, checkpoints and
// progress; the epoch figures it writes are the sums over all ranks.
//
// Before the first step the ranks agree (agree) that they run the same
// settings on the same data, and every collective goes through dist.Check,
// so that ranks that differ stop with a message naming the setting and the
// rank instead of corrupting memory or training to a wrong result.

// distRun is one rank's part in a data-parallel run; with a world of one
// it changes nothing.
type distRun struct {
	comm dist.Comm
	sync *dist.Buckets // the host path's (MPI) sync; nil with one rank or with NCCL
	dev  deviceSync    // the device path's (NCCL, dist_nccl.go); nil otherwise
}

// deviceSync is a data-parallel run's sync of gradients that stay on the
// GPU (train.dist nccl): made by newDeviceSync, which the stokecuda build
// sets (dist_nccl.go).
type deviceSync interface {
	Name() string // e.g. "NCCL (libnccl.so.2)"
	Len() int     // buckets
	Floats() int  // floats summed per step
	Steps() int   // steps synchronized so far
	// Hook installs the sync in net, a model rebuilt at another size.
	Hook(net Backend) error
	Close()
}

// newDeviceSync makes the NCCL sync of net's gradients over comm (nil in
// a build without stokecuda). required is train.dist nccl; with auto it
// may answer (nil, reason, nil): NCCL does not load on every rank, and the
// run sums over MPI instead, saying why.
var newDeviceSync func(comm dist.Comm, net Backend, cfg config.Config, required bool) (deviceSync, string, error)

func newDistRun(comm dist.Comm) *distRun {
	if comm == nil {
		comm = dist.Single{}
	}
	return &distRun{comm: dist.Check(comm)}
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

// replica is what the ranks of a run must agree on besides the settings:
// what each rank read and resumed from.
type replica struct {
	Classes     []string
	Files       data.FileList
	Decoder     string // the JPEG decoder resolved
	Epoch, Step int    // resumed from; 0, 0 in a fresh run
}

// setup makes net a replica: the ranks agree on their settings and data,
// rank 0's weights and optimizer state (fresh, or resumed) are broadcast to
// every rank, as DDP does at construction, and its training steps sum
// gradients across ranks.
func (d *distRun) setup(net Backend, cfg config.Config, rep replica, out io.Writer) error {
	if !d.parallel() {
		return nil
	}
	gs, ok := net.(gradSyncer)
	if !ok {
		return fmt.Errorf("train.dist %s on device %s: this backend takes no gradient hook, so it cannot train data-parallel", cfg.Train.Dist, cfg.Train.Device)
	}
	if cfg.Train.Device == "cuda" && cfg.Cuda.Graphs == "on" {
		return fmt.Errorf("cuda.graphs on with train.dist %s: a data-parallel step waits for the host (its loss goes through it), so it cannot be captured as a CUDA Graph; use cuda.graphs auto (the steps then launch kernel by kernel) or off", cfg.Train.Dist)
	}
	if err := d.agree(cfg, rep); err != nil {
		return err
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
	var why string
	if wantNCCL(cfg) {
		if newDeviceSync == nil {
			if cfg.Train.Dist == dist.KindNCCL {
				return fmt.Errorf("train.dist nccl: this train was built without -tags stokecuda, so it has no GPU and no NCCL (docs/cuda.md); use train.dist mpi")
			}
			why = "this build has no NCCL"
		} else {
			ds, reason, err := newDeviceSync(d.comm, net, cfg, cfg.Train.Dist == dist.KindNCCL)
			if err != nil {
				return err
			}
			if ds != nil {
				d.dev = ds
				fmt.Fprintf(out, "data parallel: %d ranks; gradients summed on the GPUs by %s (its id sent over %s), in %d bucket(s) of <= %.0f MB; global batch %d = %d per rank\n",
					d.ranks(), ds.Name(), d.comm.Name(), ds.Len(), cfg.Train.DistBucketMB, cfg.Data.BatchSize*d.ranks(), cfg.Data.BatchSize)
				return nil
			}
			why = reason
		}
	}
	// The gradients only: params also holds the BatchNorm buffers, which
	// are broadcast above but not summed.
	d.sync = dist.NewBuckets(d.comm, gs.GradSizes(), int(cfg.Train.DistBucketMB*(1<<20)))
	gs.SetGradSync(d.sync)
	if why != "" {
		why = " (not NCCL: " + why + ")"
	}
	fmt.Fprintf(out, "data parallel: %d ranks over %s%s; global batch %d = %d per rank; gradients in %d bucket(s) of <= %.0f MB\n",
		d.ranks(), d.comm.Name(), why, cfg.Data.BatchSize*d.ranks(), cfg.Data.BatchSize, d.sync.Len(), cfg.Train.DistBucketMB)
	return nil
}

// wantNCCL: train.dist nccl, or auto on --device cuda (with several
// ranks: setup runs only then).
func wantNCCL(cfg config.Config) bool {
	return cfg.Train.Dist == dist.KindNCCL || (cfg.Train.Dist == dist.KindAuto && cfg.Train.Device == "cuda")
}

// rehook installs the run's gradient sync in net, a model rebuilt at
// another size (data.progressive), as in the one it replaces.
func (d *distRun) rehook(net Backend) error {
	switch {
	case d.dev != nil:
		return d.dev.Hook(net)
	case d.sync != nil:
		gs, ok := net.(gradSyncer)
		if !ok {
			return fmt.Errorf("the rebuilt model takes no gradient hook")
		}
		gs.SetGradSync(d.sync)
	}
	return nil
}

// close ends the device sync's communicator (after the nets are closed).
func (d *distRun) close() {
	if d.dev != nil {
		d.dev.Close()
		d.dev = nil
	}
}

// perRank lists the settings the ranks of one run may set differently,
// each with why that leaves the numbers alone; every other setting, the
// class list, the file list, the decoder and the checkpoint resumed from
// must be the same on every rank. docs/distributed.md shows this list.
var perRank = []struct{ Path, Why string }{
	{"data.root", "each node may keep the dataset elsewhere; its file list is compared instead"},
	{"data.workers", "batches are identical whatever the worker count"},
	{"data.prefetch", "only how far the loader runs ahead"},
	{"data.pin_memory", "only where batch buffers live"},
	{"data.cache_dir", "only where a generated dataset is kept; its file list is compared"},
	{"data.decoder", "the decoder each rank resolves (auto: turbo where it is installed) is compared instead"},
	{"train.out", "only rank 0 writes the run folder"},
	{"train.resume", "each rank may read the checkpoint from its own path; the epoch and step resumed from are compared"},
	{"train.threads", "only how many OS threads run Go code on the rank"},
	{"train.progress", "only rank 0 prints"},
	{"train.keep_checkpoints", "only rank 0 writes checkpoints"},
	{"train.trace", "only rank 0 writes a timeline"},
	{"train.non_blocking", "only when the rank's copies happen"},
	{"train.dist_timeout", "only how long the rank waits in a collective"},
}

func isPerRank(path string) bool {
	for _, p := range perRank {
		if p.Path == path {
			return true
		}
	}
	return false
}

// agreement is the text the ranks compare, one "key: value" a line: the
// resolved settings less perRank's, and what rep holds.
func agreement(cfg config.Config, rep replica) string {
	var b strings.Builder
	for _, f := range cfg.Fields() {
		if !isPerRank(f.Path) {
			fmt.Fprintf(&b, "%s: %s\n", f.Path, oneLine(f.String()))
		}
	}
	fmt.Fprintf(&b, "JPEG decoder (resolved): %s\n", rep.Decoder)
	fmt.Fprintf(&b, "class list: %d classes: %s\n", len(rep.Classes), oneLine(strings.Join(rep.Classes, ", ")))
	fmt.Fprintf(&b, "file list: %d train and %d val images\n", rep.Files.Train, rep.Files.Val)
	fmt.Fprintf(&b, "file list's names and sizes: sha256 %s\n", rep.Files.SHA256)
	if rep.Epoch == 0 && rep.Step == 0 {
		fmt.Fprintf(&b, "resumed from: none (a fresh run)\n")
	} else {
		fmt.Fprintf(&b, "resumed from: a checkpoint of epoch %d, step %d\n", rep.Epoch, rep.Step)
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// agree stops every rank, with the same message naming each setting that
// differs, its values and the ranks, unless all ranks hold the same
// agreement.
func (d *distRun) agree(cfg config.Config, rep replica) error {
	dis, err := dist.Agree(d.comm, []byte(agreement(cfg, rep)))
	if err != nil || dis == nil {
		return err
	}
	ref := parseAgreement(string(dis.Rank0))
	var lines []string
	for _, r := range dis.Ranks {
		text, ok := dis.Texts[r]
		if !ok {
			lines = append(lines, fmt.Sprintf("rank %d differs too (not detailed)", r))
			continue
		}
		mine := parseAgreement(string(text))
		for _, kv := range ref {
			v, _ := lookup(mine, kv[0])
			if v != kv[1] {
				a, b := excerpts(kv[1], v)
				lines = append(lines, fmt.Sprintf("%s is %s on rank 0 but %s on rank %d", kv[0], a, b, r))
			}
		}
		for _, kv := range mine {
			if _, ok := lookup(ref, kv[0]); !ok {
				lines = append(lines, fmt.Sprintf("%s is %s on rank %d, and unknown to rank 0 (another stoke?)", kv[0], kv[1], r))
			}
		}
		if len(mine) == len(ref) && len(lines) == 0 {
			lines = append(lines, fmt.Sprintf("rank %d's settings differ from rank 0's in a way not shown", r))
		}
	}
	return fmt.Errorf("the ranks of this run disagree, so none of them trains (every rank must run the same settings on the same data; only per-rank settings such as data.workers or train.progress may differ, docs/distributed.md lists them):\n  %s",
		strings.Join(lines, "\n  "))
}

func parseAgreement(s string) [][2]string {
	var out [][2]string
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		out = append(out, [2]string{k, v})
	}
	return out
}

func lookup(kvs [][2]string, k string) (string, bool) {
	for _, kv := range kvs {
		if kv[0] == k {
			return kv[1], true
		}
	}
	return "(missing)", false
}

// excerpts shortens two long values to where they first differ.
func excerpts(a, b string) (string, string) {
	const width = 80
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	cut := func(s string) string {
		from := max(0, i-20)
		out := s[from:min(len(s), from+width)]
		if from > 0 {
			out = "…" + out
		}
		if from+width < len(s) {
			out += "…"
		}
		return fmt.Sprintf("%q", out)
	}
	if len(a) <= width && len(b) <= width {
		return a, b
	}
	return cut(a), cut(b)
}

// checkpointConfig is the config a checkpoint records: with the global
// batch (data.batch_size × ranks) as its batch size, so that it resumes on
// any number of ranks that keeps the global batch (1 rank × 64 from 2 × 32).
func (d *distRun) checkpointConfig(cfg config.Config) config.Config {
	cfg.Data.BatchSize *= d.ranks()
	return cfg
}

// resumable says whether st's global batch splits over this run's ranks.
func (d *distRun) resumable(st *checkpointState) error {
	if _, err := config.PerRankBatch(st.Config.Data.BatchSize, d.ranks()); err != nil {
		return fmt.Errorf("cannot resume from %s on %d ranks: %w", st.Dir, d.ranks(), err)
	}
	return nil
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
	if d.dev != nil {
		if n := d.dev.Steps(); n > 0 {
			fmt.Fprintf(out, "  allreduce: %s on the device, %d steps so far, %d buckets, %.2f MB/step (overlap with backward is not timed: that would wait for the device)\n",
				d.dev.Name(), n, d.dev.Len(), float64(4*d.dev.Floats())/(1<<20))
		}
		return
	}
	if d.sync == nil {
		return
	}
	s := d.sync.TakeStats()
	if s.Steps == 0 {
		return
	}
	fmt.Fprintf(out, "  allreduce: %.2f ms/step of communication, %.2f ms/step waited after backward, %.0f%% overlapped backward (%d steps, %d buckets, %.2f MB/step)\n",
		s.SpanMS/float64(s.Steps), s.ExposedMS/float64(s.Steps), 100*s.Overlap(), s.Steps, d.sync.Len(), float64(4*d.sync.Floats())/(1<<20))
}
