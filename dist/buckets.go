package dist

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Buckets sums a training step's gradients over the ranks: the
// model.GradSync of a data-parallel run (the hook in model/gradsync.go
// hands it each gradient as backward produces it). Parameters are packed,
// last first (the order backward produces them, as PyTorch DDP buckets
// them), into buckets of about capBytes; a bucket's allreduce starts once
// all its gradients are in and every bucket before it has started (so
// every rank starts the same collectives in the same order). Each rank
// adds n·g (n its samples in the step) and one more float, n, to the first
// bucket; after the sum every gradient is divided by the total n: the mean
// gradient over the global batch, as one process computes it, also when
// the ranks' slices differ in size (a short last batch).
//
// Over a Check'ed communicator every step first agrees on the buckets'
// sizes with one header, started at Begin and checked when the first
// bucket starts, so that a rank with another layout stops the step with a
// message instead of an allreduce over buffers of different sizes.
type Buckets struct {
	comm    Comm
	buckets []*bucket
	sizes   []int  // each bucket's length, the layout the ranks agree on
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
	req     Request
}

// NewBuckets packs gradients of the given lengths (in the hook's order)
// into buckets of about capBytes.
func NewBuckets(comm Comm, sizes []int, capBytes int) *Buckets {
	s := &Buckets{comm: comm, where: make([]slot, len(sizes)), grads: make([][]float32, len(sizes))}
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
	if len(s.buckets) == 0 {
		s.buckets = append(s.buckets, &bucket{})
	}
	s.buckets[0].buf = append(s.buckets[0].buf, 0) // the sample count
	s.floats++
	for _, b := range s.buckets {
		s.sizes = append(s.sizes, len(b.buf))
	}
	return s
}

// Len is the number of buckets; Floats the floats summed per step.
func (s *Buckets) Len() int    { return len(s.buckets) }
func (s *Buckets) Floats() int { return s.floats }

// Begin starts a step with n samples on this rank.
func (s *Buckets) Begin(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n, s.next, s.failure = float32(n), 0, nil
	for _, b := range s.buckets {
		b.pending, b.req = len(b.params), nil
	}
	b0 := s.buckets[0].buf
	b0[len(b0)-1] = s.n
	if g, ok := s.comm.(*checked); ok {
		s.failure = g.startGroup(s.sizes)
	}
}

// Ready takes parameter i's gradient g (n·g goes into its bucket).
func (s *Buckets) Ready(i int, g []float32) {
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
func (s *Buckets) startReady(all bool) {
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

// Wait starts what is left, waits for every bucket and leaves the mean
// gradient over the global batch in each gradient handed over.
func (s *Buckets) Wait() error {
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

// TakeStats returns the timings since the last call and starts afresh.
func (s *Buckets) TakeStats() CommStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	s.stats = CommStats{}
	return st
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
