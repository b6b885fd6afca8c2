//go:build stokecuda

package cudaops

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
	G "gorgonia.org/gorgonia"

	"stoke/model"
)

// DeviceAllreducer sums float32s in device memory over the ranks, queued on
// a CUDA stream (dist.NCCL is one; cudaops does not import dist, whose
// tests load cudaops).
type DeviceAllreducer interface {
	Rank() int
	Size() int
	// AllreduceSum enqueues on stream the in-place sum over all ranks of
	// the count float32s at device address buf.
	AllreduceSum(buf uintptr, count int, stream uintptr) error
	// AsyncError is a failure of a collective already enqueued (a peer
	// that died), or nil; a host call that does not wait for the device.
	AsyncError() error
}

// NCCLSync is the model.DeviceGradSync of a data-parallel run on the GPU:
// the gradients stay on the device and a DeviceAllreducer (NCCL) sums them
// in buckets on a stream of the sync's own, each bucket as soon as backward
// has queued its last gradient, while the rest of backward runs on the
// compute stream (PyTorch DDP's buckets, in the same order on every rank:
// the output layer's parameters first).
//
// A bucket starts with an event recorded on the compute stream after its
// gradients' ops, which the sync's stream waits for (cuStreamWaitEvent);
// there the gradients are copied into the bucket's buffer, scaled by
// n/N (this rank's samples over the global batch's, so that the sum is the
// mean gradient of the global batch, as one process computes it, also when
// the ranks' slices differ: n = 0 puts zeros in), summed by the
// allreduce and copied back into the gradients. Wait records an event at
// the end of the sync's stream and makes the compute stream wait for it
// before the optimizer's kernels: the host never waits for the device.
//
// N comes from total, a host sum of the ranks' n at Begin (the trainer's
// MPI world): a few bytes over the network per step, and the step's
// check that every rank is still there, within train.dist_timeout.
type NCCLSync struct {
	b      *Backend
	comm   DeviceAllreducer
	total  func(n int) (int, error)
	stream cu.Stream
	sp     uintptr    // stream as NCCL takes it
	e      *gpuEngine // kernels on stream
	done   cu.Event
	sizes  []int
	where  []gslot
	bucket []*gbucket

	mu      sync.Mutex
	n       int
	scale   float32
	next    int
	vals    []devBuf
	failure error
	steps   int
}

type gslot struct{ bucket, off int }

type gbucket struct {
	buf     devBuf
	params  []int
	pending int
	ready   cu.Event // recorded on the compute stream once its gradients are queued
}

var _ model.DeviceGradSync = (*NCCLSync)(nil)

// NewNCCLSync makes the sync of b's gradients over comm in buckets of
// about capBytes and installs it in b (steps in flight finish first).
// total sums a step's sample counts over the ranks. The bucket buffers are
// allocated here, once.
func (b *Backend) NewNCCLSync(comm DeviceAllreducer, total func(n int) (int, error), capBytes int) (*NCCLSync, error) {
	if b.closed {
		return nil, errors.New("cudaops: the backend is closed")
	}
	b.drain()
	sizes := b.m.GradSizes()
	s := &NCCLSync{b: b, comm: comm, total: total, sizes: sizes, where: make([]gslot, len(sizes)), vals: make([]devBuf, len(sizes))}
	var cur *gbucket
	var lens []int
	for i := len(sizes) - 1; i >= 0; i-- {
		if cur == nil || (4*lens[len(lens)-1] >= capBytes && len(cur.params) > 0) {
			cur = &gbucket{}
			s.bucket = append(s.bucket, cur)
			lens = append(lens, 0)
		}
		s.where[i] = gslot{len(s.bucket) - 1, lens[len(lens)-1]}
		lens[len(lens)-1] += sizes[i]
		cur.params = append(cur.params, i)
	}
	err := b.dev.do(func() error {
		var err error
		if s.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
			return err
		}
		s.sp = uintptr(unsafe.Pointer(s.stream.C()))
		// The scaling (scale_unless) reads the engine's
		// non-finite flag (a live device int: the backend's, or the
		// engine's own that nothing sets); a step it stops has no update
		// to scale for.
		s.e = &gpuEngine{mod: b.e.mod, fn: b.e.fn, s: s.stream, flag: b.e.flag}
		for k := range s.e.ptrs {
			s.e.ptrs[k] = unsafe.Pointer(&s.e.args[k])
		}
		if s.done, err = cu.MakeEvent(cu.DisableTiming); err != nil {
			return err
		}
		for k, g := range s.bucket {
			p, err := cu.MemAlloc(int64(4 * max(lens[k], 1)))
			if err != nil {
				return fmt.Errorf("cuMemAlloc of a %d-byte gradient bucket: %w", 4*lens[k], err)
			}
			g.buf = devBuf{p, lens[k]}
			if g.ready, err = cu.MakeEvent(cu.DisableTiming); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.free()
		return nil, fmt.Errorf("cudaops: NCCL gradient sync: %w", err)
	}
	b.installGradSync(s)
	b.nsync = s
	return s, nil
}

// Len is the number of buckets; Floats the floats summed per step.
func (s *NCCLSync) Len() int { return len(s.bucket) }
func (s *NCCLSync) Floats() int {
	n := 0
	for _, g := range s.bucket {
		n += g.buf.n
	}
	return n
}

// Steps is the number of steps synchronized so far.
func (s *NCCLSync) Steps() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.steps
}

// Begin starts a step with n samples on this rank: it reports a collective
// of an earlier step that failed on the stream (a dead peer), and sums the
// ranks' n on the host.
func (s *NCCLSync) Begin(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n, s.next, s.failure = n, 0, nil
	clear(s.vals)
	for _, g := range s.bucket {
		g.pending = len(g.params)
	}
	if err := s.comm.AsyncError(); err != nil {
		s.failure = err
		return
	}
	N, err := s.total(n)
	switch {
	case err != nil:
		s.failure = fmt.Errorf("summing the ranks' sample counts: %w", err)
	case N <= 0 || N < n:
		s.failure = fmt.Errorf("the ranks' sample counts sum to %d (this rank has %d)", N, n)
	default:
		s.scale = float32(float64(n) / float64(N))
	}
}

// Ready is the host path's hand-over, which a DeviceGradSync is not given.
func (s *NCCLSync) Ready(i int, _ []float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure == nil {
		s.failure = fmt.Errorf("cudaops: NCCLSync was handed a host copy of gradient %d; it sums device values only", i)
	}
}

// ReadyValue takes parameter i's gradient value (device memory written by
// an op already queued on the compute stream).
func (s *NCCLSync) ReadyValue(i int, v G.Value) error {
	d, err := buf(v)
	if err != nil {
		return fmt.Errorf("gradient %d: %w", i, err)
	}
	if i < 0 || i >= len(s.sizes) || d.n != s.sizes[i] {
		return fmt.Errorf("cudaops: NCCLSync: gradient %d of %d floats does not fit its slot", i, d.n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vals[i].p != 0 {
		return fmt.Errorf("cudaops: NCCLSync: gradient %d handed over twice in one step", i)
	}
	s.vals[i] = d
	s.bucket[s.where[i].bucket].pending--
	return s.b.dev.do(func() error { s.startReady(false); return nil })
}

// startReady queues, in order, the buckets whose gradients are all in (all
// the remaining ones when all is set). The context is current.
func (s *NCCLSync) startReady(all bool) {
	for s.next < len(s.bucket) && (all || s.bucket[s.next].pending == 0) {
		g := s.bucket[s.next]
		s.next++
		if s.failure != nil {
			continue
		}
		s.failure = s.queue(g)
	}
}

// queue: the bucket's wait, copies in, scale, sum and copies out, on the
// sync's stream.
func (s *NCCLSync) queue(g *gbucket) error {
	if err := first(g.ready.Record(s.b.compute), s.stream.Wait(g.ready, 0)); err != nil {
		return err
	}
	for _, j := range g.params {
		dst := sub(g.buf, s.where[j].off, s.sizes[j])
		var err error
		if s.n == 0 || s.vals[j].p == 0 {
			// No samples here, or a gradient never handed over (backward
			// failed; the step fails too): zeros, so the others' sums hold.
			err = s.e.zero(dst, 0, s.sizes[j])
		} else {
			err = s.e.copyD2D(s.vals[j], dst, s.sizes[j])
		}
		if err != nil {
			return err
		}
	}
	if s.n > 0 && s.scale != 1 {
		// w −= (1 − f)·w is w·f, rounded as sgd's w −= lr·w was.
		if err := s.e.scaleUnless(g.buf, g.buf.n, 1-s.scale); err != nil {
			return err
		}
	}
	if err := s.comm.AllreduceSum(uintptr(g.buf.p), g.buf.n, s.sp); err != nil {
		return err
	}
	for _, j := range g.params {
		if s.vals[j].p == 0 {
			continue
		}
		if err := s.e.copyD2D(sub(g.buf, s.where[j].off, s.sizes[j]), s.vals[j], s.sizes[j]); err != nil {
			return err
		}
	}
	return nil
}

// Wait queues the buckets left (all of them with n = 0) and makes the
// compute stream wait for the end of the sync's stream: the update that
// follows reads the sums. It does not wait on the host.
func (s *NCCLSync) Wait() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.b.dev.do(func() error {
		s.startReady(true)
		return first(s.done.Record(s.stream), s.b.compute.Wait(s.done, 0))
	})
	if err = errors.Join(s.failure, err); err != nil {
		return err
	}
	s.steps++
	return nil
}

// free releases the stream, events and buckets (Backend.Close calls it).
func (s *NCCLSync) free() {
	s.b.dev.do(func() error {
		if s.stream.C() != nil {
			s.stream.Synchronize()
		}
		for _, g := range s.bucket {
			if g.buf.p != 0 {
				cu.MemFree(g.buf.p)
			}
			if g.ready != (cu.Event{}) {
				cu.DestroyEvent(&g.ready)
			}
		}
		if s.done != (cu.Event{}) {
			cu.DestroyEvent(&s.done)
		}
		if s.stream.C() != nil {
			s.stream.Destroy()
		}
		return nil
	})
}

// WithContext runs f with b's device context current on a locked OS
// thread (NCCL binds a communicator to the context current where it is
// made).
func (b *Backend) WithContext(f func() error) error { return b.dev.do(f) }
