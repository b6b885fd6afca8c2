package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// LoaderConfig configures a Loader. Index and Transform are required.
type LoaderConfig struct {
	Index     *Index
	Transform Transform
	BatchSize int
	// Workers is the number of loader goroutines (PyTorch's num_workers);
	// 0 loads inline, in the goroutine that calls Next. It is where the
	// loader starts: Iter.SetWorkers changes it mid-epoch (data.workers:
	// auto, autoworkers.go).
	Workers int
	// Prefetch is the number of batches in flight per worker (PyTorch's
	// prefetch_factor), at least 1; ignored when Workers is 0.
	Prefetch int
	// MinPool is the fewest batch buffers the loader keeps, whatever
	// Workers·Prefetch asks for: a device backend that keeps a batch's
	// buffer until its asynchronous copy is done asks for one more than it
	// keeps (cudaops.Backend.HeldBatches), so that the loader always has
	// one to fill and the host need not wait for each copy. 0: none.
	MinPool   int
	Shuffle   bool
	DropLast  bool
	Seed      uint64
	Alloc     Allocator // nil = Pageable
	MaxPixels int       // passed to Decode; 0 = DefaultMaxPixels
	// MaxDecodeBytes is each decode's memory budget (Decoder.MaxBytes); 0 =
	// DefaultMaxDecodeBytes. The loader's memory is then at most Workers
	// (1 when 0) x (MaxDecodeBytes + 32 MiB of kept buffers), plus the
	// batch pool, plus the transform's scratch.
	MaxDecodeBytes int64
	// SkipBadImages leaves an image that fails to decode out of its batch
	// (listed in Batch.Skipped) instead of failing the epoch with its
	// ImageError. The batch is then shorter: N counts the images kept.
	SkipBadImages bool
	// Decoder picks the JPEG decoder: DecoderAuto ("", libjpeg-turbo when
	// present), DecoderTurbo or DecoderGo.
	Decoder string
	// DType is the batch element type: DTypeFloat32 ("", normalized
	// float32 in Batch.X) or DTypeUint8 (uint8 in Batch.U8, 4x fewer bytes,
	// to be normalized on the device or with augment.NormalizeU8; needs a
	// RegionTransform).
	DType string
	// NoDCTScale decodes every JPEG at full size even when a RegionTransform
	// would allow a reduced one (for comparisons; slower).
	NoDCTScale bool
	// Split makes this the loader of one rank of a data-parallel run: its
	// batches are its slice of each global batch of BatchSize·Split.Ranks
	// samples (Split's comment); the zero Split is the whole of each batch.
	Split Split
	// ShuffleBuffer > 0 is sequential mode, for a shard set on storage
	// where random reads are slow: epochs visit the samples in
	// ShardOrder(Index, Seed, epoch, Shuffle, ShuffleBuffer) order instead
	// of the global Permutation. 0 is the global permutation.
	ShuffleBuffer int
	// MinSlice is the fewest images a training step may hold (BatchNorm
	// over one value per channel has no variance: see
	// model.Spec.MinBatchNormPlane). A slice of a short last batch with
	// fewer is left empty, as a rank's empty slice is, and a last global
	// batch left wholly empty is not an epoch's batch at all, as with
	// DropLast; so is a batch that bad images (SkipBadImages) bring below
	// it. Only that case changes: 0 or 1 leaves every batch as it is.
	MinSlice int
	// MaxSize is the largest Transform.Size() of any epoch, for a loader
	// whose transform changes between epochs (SetTransform: progressive
	// resizing); 0 = Transform.Size(). The batch buffers are allocated
	// once, for MaxSize.
	MaxSize int
}

// The batch element types (LoaderConfig.DType).
const (
	DTypeFloat32 = "float32"
	DTypeUint8   = "uint8"
)

// Batch is one batch of samples in a buffer from the Loader's pool.
//
// The buffer's layout, as Bytes holds it, native byte order:
//
//	float32: X  (BatchSize*3*S*S float32, CHW per sample, sample after sample), then Labels
//	uint8:   U8 (BatchSize*3*S*S bytes, same order), zero padding to a multiple of 64 bytes, then Labels
//
// Labels is BatchSize int32. X (or U8) and Labels are views of Bytes;
// LabelsOffset is where Labels start. Only one of X and U8 is set. S is
// the side of the epoch's transform: in a loader sized for a larger
// LoaderConfig.MaxSize, X (or U8) is the front of the space before Labels.
type Batch struct {
	Epoch, Index int       // epoch, and batch number within it
	N            int       // valid samples (the last batch may be short unless DropLast)
	X            []float32 // BatchSize*3*S*S normalized values (DTypeFloat32); rows >= N are zero
	U8           []uint8   // BatchSize*3*S*S values round(255 v) (DTypeUint8); rows >= N are zero
	Labels       []int32   // BatchSize; rows >= N are 0
	Samples      []int     // dataset indices of the N samples
	Skipped      []int     // dataset indices left out as bad images (SkipBadImages only)
	Worker       int       // which worker built it (-1 = inline)
	Start, End   time.Time // when loading of this batch began and ended
	Bytes        []byte    // the underlying buffer as allocated (for copies to a device)
	LabelsOffset int       // byte offset of Labels in Bytes

	loader *Loader
	out    atomic.Bool // handed to the caller and not yet released
}

// BatchInfo is what a batch was, without its data: it stays valid after
// Release, for timelines and counts.
type BatchInfo struct {
	Epoch, Index, N int
	Worker          int
	Start, End      time.Time
}

// Info returns the batch's BatchInfo.
func (b *Batch) Info() BatchInfo {
	return BatchInfo{Epoch: b.Epoch, Index: b.Index, N: b.N, Worker: b.Worker, Start: b.Start, End: b.End}
}

// Release gives the batch's buffer back to the pool for the Loader to
// refill. The caller must not touch X, Labels or Bytes afterwards. Calling
// it again before the batch is handed out anew does nothing.
func (b *Batch) Release() {
	if b == nil || b.loader == nil || !b.out.CompareAndSwap(true, false) {
		return
	}
	b.loader.held.Add(-1)
	b.loader.put(b)
}

// Loader turns an Index into batches, epoch after epoch, reusing a fixed
// pool of batch buffers. Use it from one goroutine (Batch.Release may be
// called from any); one Iter is live at a time.
type Loader struct {
	cfg       LoaderConfig
	sampleLen int // 3*S*S floats per sample, S the transform's side
	maxLen    int // 3*MaxSize*MaxSize: what each buffer holds per sample
	nb        int // batches per epoch

	region RegionTransform // cfg.Transform, when it is one

	workers int // loader goroutines of the next Epoch (SetWorkers)

	bufs []*Batch      // every buffer, allocated once
	pool chan *Batch   // the free ones
	held atomic.Int32  // handed to the caller, not yet released
	ws   []workerState // per worker (one for inline), reused across epochs
	perm []int

	reader *SampleReader // the samples' bytes: files, or members of shards

	mu     sync.Mutex // guards closed and active, and orders put with Close
	closed bool
	active *Iter
}

// workerState is what one loading goroutine keeps between samples.
type workerState struct {
	dec Decoder
	src *SampleSource
}

// DecoderName names the JPEG decoder the loader uses, for a run to print.
func (l *Loader) DecoderName() string { return DecoderName(l.cfg.Decoder) }

// DType is the batch element type, DTypeFloat32 or DTypeUint8.
func (l *Loader) DType() string { return l.cfg.DType }

// NewLoader checks cfg and allocates the loader's buffers:
// Workers*Prefetch of them (2 when Workers is 0), each holding
// BatchSize*3*S*S float32 and BatchSize int32 labels. They are never
// freed before Close; SetWorkers adds more when more workers need them.
func NewLoader(cfg LoaderConfig) (*Loader, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	rt, _ := cfg.Transform.(RegionTransform)
	if cfg.DType == "" {
		cfg.DType = DTypeFloat32
	}
	if cfg.Alloc == nil {
		cfg.Alloc = Pageable{}
	}
	s := cfg.Transform.Size()
	if cfg.MaxSize == 0 {
		cfg.MaxSize = s
	}
	n := len(cfg.Index.Samples)
	l := &Loader{cfg: cfg, sampleLen: 3 * s * s, maxLen: 3 * cfg.MaxSize * cfg.MaxSize, perm: make([]int, n), region: rt, workers: cfg.Workers}
	l.nb = cfg.Split.NumBatches(n, cfg.BatchSize, cfg.DropLast)
	if g := cfg.BatchSize * cfg.Split.ranks(); !cfg.DropLast && n%g != 0 && n%g < cfg.MinSlice {
		l.nb-- // the short last batch would be all empty slices
	}
	if l.nb == 0 {
		return nil, fmt.Errorf("data: the %d samples of %s make no batch of at least %d (LoaderConfig.MinSlice)", n, cfg.Index.Root, cfg.MinSlice)
	}
	if err := l.grow(cfg.Workers); err != nil {
		return nil, err
	}
	l.reader = NewSampleReader(cfg.Index)
	return l, nil
}

// poolFor is the buffers w workers take: Prefetch each, 2 when inline.
func (l *Loader) poolFor(w int) int {
	if w > 0 {
		return max(w*l.cfg.Prefetch, l.cfg.MinPool)
	}
	return max(2, l.cfg.MinPool)
}

// grow gives the loader the buffers and worker states w workers need,
// keeping those it has. No worker may be running.
func (l *Loader) grow(w int) error {
	if need := l.poolFor(w); need > len(l.bufs) {
		if err := l.allocPool(need); err != nil {
			return err
		}
	}
	for len(l.ws) < max(w, 1) {
		l.ws = append(l.ws, workerState{dec: Decoder{MaxPixels: l.cfg.MaxPixels, MaxBytes: l.cfg.MaxDecodeBytes, Kind: l.cfg.Decoder}, src: NewSampleSource()})
	}
	return nil
}

// Workers is the number of loader goroutines the next Epoch starts with
// (0 = inline): LoaderConfig.Workers, or the last SetWorkers.
func (l *Loader) Workers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.workers
}

// SetWorkers sets the worker count of the epochs to come; Iter.SetWorkers
// changes the live epoch's too. Batches are the same whatever the count.
func (l *Loader) SetWorkers(w int) error {
	if err := l.checkWorkers(w); err != nil {
		return err
	}
	l.mu.Lock()
	active, closed := l.active, l.closed
	l.mu.Unlock()
	if closed {
		return errors.New("data: SetWorkers on a closed Loader")
	}
	if active != nil {
		return active.SetWorkers(w)
	}
	if err := l.grow(w); err != nil {
		return err
	}
	l.mu.Lock()
	l.workers = w
	l.mu.Unlock()
	return nil
}

func (l *Loader) checkWorkers(w int) error {
	switch {
	case w < 0:
		return fmt.Errorf("data: SetWorkers(%d): the worker count must be >= 0 (0 = load inline)", w)
	case w > 0 && l.cfg.Prefetch < 1:
		return fmt.Errorf("data: SetWorkers(%d): LoaderConfig.Prefetch is %d, must be >= 1 to run workers", w, l.cfg.Prefetch)
	}
	return nil
}

// check refuses a LoaderConfig that cannot make batches, naming the field.
func (cfg *LoaderConfig) check() error {
	switch {
	case cfg.Index == nil:
		return errors.New("data: LoaderConfig.Index is nil")
	case len(cfg.Index.Samples) == 0:
		return fmt.Errorf("data: LoaderConfig.Index (%s) has no samples", cfg.Index.Root)
	case cfg.Transform == nil:
		return errors.New("data: LoaderConfig.Transform is nil")
	case cfg.Transform.Size() <= 0:
		return fmt.Errorf("data: LoaderConfig.Transform.Size() is %d, must be > 0", cfg.Transform.Size())
	case cfg.BatchSize < 1:
		return fmt.Errorf("data: LoaderConfig.BatchSize is %d, must be >= 1", cfg.BatchSize)
	case cfg.Workers < 0:
		return fmt.Errorf("data: LoaderConfig.Workers is %d, must be >= 0 (0 = load inline)", cfg.Workers)
	case cfg.Workers > 0 && cfg.Prefetch < 1:
		return fmt.Errorf("data: LoaderConfig.Prefetch is %d, must be >= 1 when Workers > 0", cfg.Prefetch)
	case cfg.MaxPixels < 0 || cfg.MaxPixels > MaxPixelsLimit:
		return fmt.Errorf("data: LoaderConfig.MaxPixels is %d, must be in [0, %d] (0 = default)", cfg.MaxPixels, MaxPixelsLimit)
	case cfg.MaxDecodeBytes < 0:
		return fmt.Errorf("data: LoaderConfig.MaxDecodeBytes is %d, must be >= 0 (0 = default)", cfg.MaxDecodeBytes)
	case cfg.ShuffleBuffer < 0:
		return fmt.Errorf("data: LoaderConfig.ShuffleBuffer is %d, must be >= 0 (0 = the global permutation)", cfg.ShuffleBuffer)
	case cfg.ShuffleBuffer > 0 && cfg.Index.Shards == nil:
		return fmt.Errorf("data: a shuffle buffer (data.shuffle_buffer, sequential mode) reads tar shards, and %s is an ImageFolder: pack it with `train pack`, or set the buffer to 0", cfg.Index.Root)
	case cfg.MaxSize != 0 && cfg.MaxSize < cfg.Transform.Size():
		return fmt.Errorf("data: LoaderConfig.MaxSize is %d, less than the transform's side %d (0 = the transform's)", cfg.MaxSize, cfg.Transform.Size())
	case cfg.MinSlice < 0 || cfg.MinSlice > cfg.BatchSize:
		return fmt.Errorf("data: LoaderConfig.MinSlice is %d, must be in [0, BatchSize %d]", cfg.MinSlice, cfg.BatchSize)
	case cfg.DropLast && cfg.BatchSize*cfg.Split.ranks() > len(cfg.Index.Samples):
		return fmt.Errorf("data: LoaderConfig.BatchSize %d (x %d ranks) exceeds the %d samples of %s: with DropLast no batch is left",
			cfg.BatchSize, cfg.Split.ranks(), len(cfg.Index.Samples), cfg.Index.Root)
	}
	if err := cfg.Split.Check(); err != nil {
		return err
	}
	if _, err := checkDecoderKind(cfg.Decoder); err != nil {
		return err
	}
	switch cfg.DType {
	case "", DTypeFloat32:
	case DTypeUint8:
		if _, ok := cfg.Transform.(RegionTransform); !ok {
			return fmt.Errorf("data: LoaderConfig.DType %q needs a RegionTransform (augment's Train or Eval); %T is not one", cfg.DType, cfg.Transform)
		}
	default:
		return fmt.Errorf("data: LoaderConfig.DType is %q: want %q or %q", cfg.DType, DTypeFloat32, DTypeUint8)
	}
	return nil
}

// allocPool allocates batch buffers through cfg.Alloc until there are
// poolSize, and makes the pool the channel that holds them all; on a
// failure it frees those it allocated now. Buffers out with the caller
// come back to the new pool (put holds mu, as the swap does).
func (l *Loader) allocPool(poolSize int) error {
	cfg := l.cfg
	xLen := cfg.BatchSize * l.maxLen
	labelsAt := 4 * xLen
	if cfg.DType == DTypeUint8 {
		labelsAt = (xLen + Align - 1) / Align * Align
	}
	nBytes := labelsAt + 4*cfg.BatchSize
	var added []*Batch
	for len(l.bufs)+len(added) < poolSize {
		mem, err := cfg.Alloc.Alloc(nBytes)
		if err == nil && len(mem) != nBytes {
			err = fmt.Errorf("returned %d bytes", len(mem))
		}
		if err != nil {
			err = fmt.Errorf("data: allocating a %d-byte %s batch buffer (%d of %d): %w", nBytes, cfg.Alloc.Name(), len(l.bufs)+len(added)+1, poolSize, err)
			for _, b := range added {
				cfg.Alloc.Free(b.Bytes)
			}
			return err
		}
		b := &Batch{
			Bytes:        mem,
			Labels:       Int32s(mem[labelsAt:]),
			LabelsOffset: labelsAt,
			Samples:      make([]int, 0, cfg.BatchSize),
			loader:       l,
		}
		// Sliced for the current side, as resliceBuffers slices the
		// others (only a new buffer is touched here: a worker may be
		// filling one of the others while SetWorkers grows the pool).
		if cur := cfg.BatchSize * l.sampleLen; cfg.DType == DTypeUint8 {
			b.U8 = mem[:cur:cur]
		} else {
			b.X = Float32s(mem[: 4*cur : 4*cur])
		}
		added = append(added, b)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	pool := make(chan *Batch, len(l.bufs)+len(added))
	for len(l.pool) > 0 {
		pool <- <-l.pool
	}
	for _, b := range added {
		pool <- b
	}
	l.bufs = append(l.bufs, added...)
	l.pool = pool
	return nil
}

// resliceBuffers makes each buffer's X (or U8) the BatchSize samples of
// the current transform's side.
func (l *Loader) resliceBuffers() {
	xLen := l.cfg.BatchSize * l.sampleLen
	for _, b := range l.bufs {
		if l.cfg.DType == DTypeUint8 {
			b.U8 = b.Bytes[:xLen:xLen]
		} else {
			b.X = Float32s(b.Bytes[: 4*xLen : 4*xLen])
		}
	}
}

// SetTransform makes t the transform of the epochs started from now on:
// progressive resizing changes the images' side between epochs. Its side
// must be at most LoaderConfig.MaxSize, and it must be a RegionTransform
// where the batches are uint8. No epoch may be in progress (every Iter
// closed) and every batch must have been released: the buffers are the
// same, re-sliced for the new side. The DCT-scaled decode follows t: its
// scale is drawn from t's Region, per image.
func (l *Loader) SetTransform(t Transform) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return errors.New("data: SetTransform on a closed Loader")
	case l.active != nil:
		return errors.New("data: SetTransform while an epoch is being read: close its Iter first")
	case l.held.Load() != 0:
		return fmt.Errorf("data: SetTransform with %d batches not released", l.held.Load())
	case t == nil:
		return errors.New("data: SetTransform(nil)")
	case t.Size() <= 0 || t.Size() > l.cfg.MaxSize:
		return fmt.Errorf("data: SetTransform: side %d, must be in [1, %d] (LoaderConfig.MaxSize, what the buffers hold)", t.Size(), l.cfg.MaxSize)
	}
	rt, _ := t.(RegionTransform)
	if l.cfg.DType == DTypeUint8 && rt == nil {
		return fmt.Errorf("data: SetTransform: uint8 batches need a RegionTransform (augment's Train or Eval); %T is not one", t)
	}
	s := t.Size()
	l.cfg.Transform, l.region, l.sampleLen = t, rt, 3*s*s
	l.resliceBuffers()
	return nil
}

// Size is the side of the images of the epochs started now (the
// transform's).
func (l *Loader) Size() int { return l.cfg.Transform.Size() }

// NumBatches is the number of batches in one epoch.
func (l *Loader) NumBatches() int { return l.nb }

// Index is the dataset the loader reads.
func (l *Loader) Index() *Index { return l.cfg.Index }

// PoolSize is the number of batch buffers (more after a SetWorkers that
// needs them; never fewer).
func (l *Loader) PoolSize() int { return len(l.bufs) }

// put returns a buffer to the pool, or frees it once the loader is closed.
func (l *Loader) put(b *Batch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.cfg.Alloc.Free(b.Bytes)
		return
	}
	l.pool <- b // never blocks: the pool has room for every buffer
}

// Close ends the live Iter, if any, and frees the buffers through the
// Allocator. Buffers still held by the caller are freed when released.
func (l *Loader) Close() error {
	l.mu.Lock()
	it := l.active
	l.mu.Unlock()
	if it != nil {
		it.Close()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	if err := l.reader.Close(); err != nil {
		errs = append(errs, fmt.Errorf("data: closing the shards: %w", err))
	}
	for {
		select {
		case b := <-l.pool:
			if err := l.cfg.Alloc.Free(b.Bytes); err != nil {
				errs = append(errs, fmt.Errorf("data: freeing a %s batch buffer: %w", l.cfg.Alloc.Name(), err))
			}
		default:
			return errors.Join(errs...)
		}
	}
}

// ErrAllBuffersHeld is returned by Next when the caller holds every batch
// buffer, so no batch can be built until one is released.
var ErrAllBuffersHeld = errors.New("data: the caller holds every batch buffer; Release a batch before calling Next again")

// Iter yields the batches of one epoch, in sampler order.
type Iter struct {
	l     *Loader
	ctx   context.Context
	epoch int
	perm  []int
	next  int   // batch to deliver next
	err   error // sticky: once set, Next returns it

	// Worker mode only.
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	jobs     atomic.Int64 // next batch number to hand to a worker
	failed   atomic.Bool  // a worker failed: take no more jobs
	results  chan result
	ring     []result // finished batches waiting for their turn, by Index % PoolSize
	closed   bool
}

type result struct {
	ok  bool // slot in use
	idx int
	b   *Batch
	err error
}

// Epoch starts epoch number epoch. Samples are visited in
// Permutation(n, Seed, epoch, Shuffle) order (ShardOrder in sequential
// mode) and sample i is transformed
// with SampleRNG(Seed, epoch, i). Starting an epoch ends the previous Iter
// if it is still open. Cancelling ctx stops the workers; Next then returns
// ctx's error.
func (l *Loader) Epoch(ctx context.Context, epoch int) *Iter {
	if ctx == nil {
		ctx = context.Background()
	}
	l.mu.Lock()
	prev, closed := l.active, l.closed
	l.mu.Unlock()
	if closed {
		return &Iter{l: l, err: errors.New("data: Epoch on a closed Loader"), closed: true}
	}
	if prev != nil {
		prev.Close()
	}
	it := &Iter{l: l, ctx: ctx, epoch: epoch, perm: l.order(epoch)}
	l.mu.Lock()
	l.active = it
	l.mu.Unlock()
	it.start(l.Workers())
	return it
}

// start runs w workers from batch it.next on (none when w is 0: inline).
func (it *Iter) start(w int) {
	if w == 0 {
		return
	}
	l := it.l
	it.done = make(chan struct{})
	it.stopOnce = sync.Once{}
	it.failed.Store(false)
	it.jobs.Store(int64(it.next))
	it.results = make(chan result, len(l.bufs)+w)
	it.ring = make([]result, len(l.bufs))
	it.wg.Add(w)
	for i := range w {
		go it.work(i)
	}
}

// SetWorkers changes the worker count from the next batch Next returns
// on, and for the epochs after. The workers running stop; batches they
// had built and Next had not yet returned go back to the pool, to be
// built again by whoever builds from now on: each sample's RNG is its own
// (SampleRNG), so the batches are the same bits, and the epoch neither
// skips nor repeats a sample. An Iter that has failed or is closed
// returns its error; one past its last batch only sets the count.
func (it *Iter) SetWorkers(w int) error {
	l := it.l
	if err := l.checkWorkers(w); err != nil {
		return err
	}
	if it.err != nil {
		return it.err
	}
	if it.closed {
		return errors.New("data: SetWorkers on a closed Iter")
	}
	it.stop()
	it.drain()
	it.done, it.results, it.ring = nil, nil, nil
	if err := l.grow(w); err != nil {
		return it.fail(err)
	}
	l.mu.Lock()
	l.workers = w
	l.mu.Unlock()
	if it.next < l.nb {
		it.start(w)
	}
	return nil
}

// drain gives back to the pool every buffer the workers built and Next
// did not return. The workers must have stopped.
func (it *Iter) drain() {
	if it.done == nil {
		return
	}
	for {
		select {
		case r := <-it.results:
			if r.b != nil {
				it.l.put(r.b)
			}
		default:
			for i, r := range it.ring {
				if r.b != nil {
					it.l.put(r.b)
				}
				it.ring[i] = result{}
			}
			return
		}
	}
}

// order is the epoch's sample order: the global permutation, or in
// sequential mode the shards' order through the shuffle buffer.
func (l *Loader) order(epoch int) []int {
	if l.cfg.ShuffleBuffer > 0 {
		return shardOrder(l.perm, l.cfg.Index, l.cfg.Seed, epoch, l.cfg.Shuffle, l.cfg.ShuffleBuffer)
	}
	return permutation(l.perm, l.cfg.Seed, epoch, l.cfg.Shuffle)
}

// work is one worker: take a free buffer, then the next batch number, build
// it, send it; until the jobs run out or the Iter stops. Taking the buffer
// before the job means the lowest unfinished batch always has a buffer, so
// the reordering in Next cannot deadlock.
func (it *Iter) work(w int) {
	defer it.wg.Done()
	l := it.l
	ctxDone := it.ctx.Done()
	for {
		var b *Batch
		select {
		case b = <-l.pool:
		case <-it.done:
			return
		case <-ctxDone:
			return
		}
		j := int(it.jobs.Add(1) - 1)
		if it.failed.Load() || j >= l.nb {
			l.pool <- b
			return
		}
		err := l.build(it, b, j, w, &l.ws[w])
		if err != nil {
			it.failed.Store(true) // before the buffer goes back: whoever takes it sees the flag
			l.pool <- b
			b = nil
			if errors.Is(err, errStopped) {
				return
			}
		}
		select {
		case it.results <- result{ok: true, idx: j, b: b, err: err}:
		case <-it.done:
			if b != nil {
				l.pool <- b
			}
			return
		}
		if err != nil {
			return
		}
	}
}

var errStopped = errors.New("data: iteration stopped")

// build fills b with batch j of the epoch.
func (l *Loader) build(it *Iter, b *Batch, j, worker int, ws *workerState) error {
	b.Epoch, b.Index, b.Worker = it.epoch, j, worker
	b.Start = time.Now()
	b.Samples, b.Skipped = b.Samples[:0], b.Skipped[:0]
	lo, hi := l.cfg.Split.Range(j, l.cfg.BatchSize, len(it.perm))
	if hi-lo < l.cfg.MinSlice {
		hi = lo // too few for BatchNorm: an empty slice
	}
	n := 0
	for _, idx := range it.perm[lo:hi] {
		if it.stopped() {
			return errStopped
		}
		s := l.cfg.Index.Samples[idx]
		if err := l.load(s.Path, idx, it.epoch, ws, b, n); err != nil {
			var ie *ImageError
			if l.cfg.SkipBadImages && errors.As(err, &ie) && ie.Path == s.Path {
				b.Skipped = append(b.Skipped, idx)
				continue
			}
			return err
		}
		b.Labels[n] = int32(s.Label)
		b.Samples = append(b.Samples, idx)
		n++
	}
	if n < l.cfg.MinSlice { // bad images left too few: an empty slice
		n, b.Samples = 0, b.Samples[:0]
	}
	b.N = n
	if b.U8 != nil {
		clear(b.U8[n*l.sampleLen:])
	} else {
		clear(b.X[n*l.sampleLen:])
	}
	clear(b.Labels[n:])
	b.End = time.Now()
	return nil
}

// load reads, decodes and transforms sample idx of epoch into slot n of b,
// stage after stage (stages.go). Errors reading or decoding are
// *ImageErrors for path; a transform's error is wrapped with the path.
func (l *Loader) load(path string, idx, epoch int, ws *workerState, b *Batch, n int) error {
	file, err := l.reader.Read(&ws.dec, idx)
	if err != nil {
		return err
	}
	h, err := ws.dec.DecodeHeader(path, file)
	if err != nil {
		return err
	}
	rng := ws.src.For(l.cfg.Seed, epoch, idx)
	lo, hi := n*l.sampleLen, (n+1)*l.sampleLen
	if l.region == nil {
		img, _, err := ws.dec.DecodeScaled(path, file, h, 1)
		if err != nil {
			return err
		}
		dst := b.X[lo:hi]
		clear(dst) // a Transform that leaves pixels unwritten must not see the last batch's
		if err := l.cfg.Transform.Apply(img, rng, dst); err != nil {
			return fmt.Errorf("data: transforming %s: %w", path, err)
		}
		return nil
	}
	c := PlanCrop(l.region, h, rng, l.cfg.NoDCTScale)
	img, scale, err := ws.dec.DecodeScaled(path, file, h, c.Scale)
	if err != nil {
		return err
	}
	if b.U8 != nil {
		return ApplyCrop(l.region, img, scale, c, rng, path, nil, b.U8[lo:hi])
	}
	return ApplyCrop(l.region, img, scale, c, rng, path, b.X[lo:hi], nil)
}

// stopped reports whether the Iter was closed or its context cancelled.
func (it *Iter) stopped() bool {
	if it.done != nil {
		select {
		case <-it.done:
			return true
		default:
		}
	}
	return it.ctx.Err() != nil
}

// Next returns the next batch in sampler order, or io.EOF after the last.
// The caller owns the batch until it calls Release. A bad image ends the
// epoch with its *ImageError (unless SkipBadImages), a cancelled context
// with ctx.Err(); either way every worker has stopped by then. If the
// caller holds every buffer, Next returns ErrAllBuffersHeld rather than
// wait for a Release that cannot come.
func (it *Iter) Next() (*Batch, error) {
	if it.err != nil {
		return nil, it.err
	}
	if it.closed {
		return nil, errors.New("data: Next on a closed Iter")
	}
	if it.next >= it.l.nb {
		it.stop()
		return nil, io.EOF
	}
	if err := it.ctx.Err(); err != nil {
		return nil, it.fail(err)
	}
	if it.done == nil {
		return it.nextInline()
	}
	p := len(it.ring)
	for {
		if r := &it.ring[it.next%p]; r.ok && r.idx == it.next {
			res := *r
			*r = result{}
			if res.err != nil {
				return nil, it.fail(res.err)
			}
			return it.deliver(res.b), nil
		}
		if int(it.l.held.Load()) >= p {
			return nil, ErrAllBuffersHeld
		}
		select {
		case r := <-it.results:
			if r.idx-it.next >= p || r.idx < it.next {
				return nil, it.fail(fmt.Errorf("data: internal error: batch %d finished while waiting for %d with %d buffers", r.idx, it.next, p))
			}
			it.ring[r.idx%p] = r
		case <-it.ctx.Done():
			return nil, it.fail(it.ctx.Err())
		}
	}
}

func (it *Iter) nextInline() (*Batch, error) {
	var b *Batch
	select {
	case b = <-it.l.pool:
	default:
		return nil, ErrAllBuffersHeld
	}
	if err := it.l.build(it, b, it.next, -1, &it.l.ws[0]); err != nil {
		it.l.put(b)
		if errors.Is(err, errStopped) {
			err = it.ctx.Err()
		}
		return nil, it.fail(err)
	}
	return it.deliver(b), nil
}

func (it *Iter) deliver(b *Batch) *Batch {
	b.out.Store(true)
	it.l.held.Add(1)
	it.next++
	if it.next == it.l.nb {
		it.stop() // every batch is out: let the workers go now
	}
	return b
}

// fail makes err sticky and stops the workers.
func (it *Iter) fail(err error) error {
	it.err = err
	it.stop()
	return err
}

// stop tells the workers to finish and waits for them.
func (it *Iter) stop() {
	if it.done == nil {
		return
	}
	it.stopOnce.Do(func() { close(it.done) })
	it.wg.Wait()
}

// Close stops and waits for the workers and returns every buffer not
// handed to the caller to the pool. It is safe to call more than once, and
// after EOF or an error.
func (it *Iter) Close() {
	if it.closed {
		return
	}
	it.closed = true
	it.stop()
	it.drain()
	if it.err == nil {
		it.err = errors.New("data: Next on a closed Iter")
	}
	l := it.l
	l.mu.Lock()
	if l.active == it {
		l.active = nil
	}
	l.mu.Unlock()
}
