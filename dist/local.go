package dist

import (
	"fmt"
	"os"
	"sync"
)

// Single is the world of one process: every collective is the identity.
type Single struct{}

func (Single) Rank() int                                    { return 0 }
func (Single) Size() int                                    { return 1 }
func (Single) AllreduceSum([]float32) error                 { return nil }
func (Single) StartAllreduceSum([]float32) (Request, error) { return done{}, nil }
func (Single) AllreduceSumFloat64([]float64) error          { return nil }
func (Single) Broadcast([]float32, int) error               { return nil }
func (Single) BroadcastBytes([]byte, int) error             { return nil }
func (Single) Barrier() error                               { return nil }
func (Single) Name() string                                 { return "single" }
func (Single) Close() error                                 { return nil }
func (Single) Abort(reason error)                           { fmt.Fprintf(os.Stderr, "rank 0: %v\n", reason) }

type done struct{}

func (done) Wait() error { return nil }

// Local returns a world of n ranks that are goroutines of this process,
// one Comm each: collectives meet in shared memory, sums add the ranks'
// buffers in rank order. It is the stand-in for MPI in tests of what sits
// above a communicator; each Comm runs its collectives in the order they
// were called, as MPI does.
func Local(n int) []Comm {
	g := &localGroup{n: n, bufs: make([]any, n)}
	g.cond = sync.NewCond(&g.mu)
	cs := make([]Comm, n)
	for r := range cs {
		c := &localComm{g: g, rank: r, jobs: make(chan func(), 64)}
		go c.serve()
		cs[r] = c
	}
	return cs
}

type localGroup struct {
	n      int
	mu     sync.Mutex
	cond   *sync.Cond
	bufs   []any // each rank's buffer in the current collective
	in     int   // ranks that have deposited
	out    int   // ranks that have taken the result
	gen    int
	result any
	resErr error
	gone   error // set when a rank closes or aborts: no collective can complete
}

type localComm struct {
	g    *localGroup
	rank int
	jobs chan func()
	once sync.Once
}

func (c *localComm) serve() {
	for job := range c.jobs {
		job()
	}
}

// meet deposits v, waits for every rank, has the last one in combine all
// deposits into the result, and returns it. Once a rank has closed or
// aborted, a collective that is not complete fails with that error instead
// of waiting for it for ever, as a peer's exit fails an MPI job.
func (g *localGroup) meet(rank int, v any, combine func([]any) (any, error)) (any, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.out > 0 && g.gone == nil { // the previous collective's results are still being taken
		g.cond.Wait()
	}
	if g.gone != nil {
		return nil, g.gone
	}
	g.bufs[rank] = v
	g.in++
	gen := g.gen
	if g.in == g.n {
		g.result, g.resErr = combine(g.bufs)
		g.in, g.out = 0, g.n
		g.gen++
		g.cond.Broadcast()
	}
	for g.gen == gen {
		if g.gone != nil {
			return nil, g.gone
		}
		g.cond.Wait()
	}
	r, err := g.result, g.resErr
	g.out--
	if g.out == 0 {
		g.cond.Broadcast()
	}
	return r, err
}

// leave marks the world broken by rank's exit, and wakes every waiter.
func (g *localGroup) leave(err error) {
	g.mu.Lock()
	if g.gone == nil {
		g.gone = err
	}
	g.cond.Broadcast()
	g.mu.Unlock()
}

// sameLen says whether every rank's buffer has the length of rank 0's: a
// collective over buffers of different sizes is a caller's bug, which MPI
// would not notice; here it is an error, not a wrong sum or a panic.
func sameLen[T any](what string, all []any) error {
	n := len(all[0].([]T))
	for r, b := range all {
		if m := len(b.([]T)); m != n {
			return fmt.Errorf("dist: %s: rank %d passed %d elements, rank 0 passed %d", what, r, m, n)
		}
	}
	return nil
}

func sum[T float32 | float64](what string) func([]any) (any, error) {
	return func(all []any) (any, error) {
		if err := sameLen[T](what, all); err != nil {
			return nil, err
		}
		s := make([]T, len(all[0].([]T)))
		for _, b := range all {
			for i, v := range b.([]T) {
				s[i] += v
			}
		}
		return s, nil
	}
}

func bcast[T any](what string, root int) func([]any) (any, error) {
	return func(all []any) (any, error) {
		if err := sameLen[T](what, all); err != nil {
			return nil, err
		}
		return append([]T(nil), all[root].([]T)...), nil
	}
}

type localReq chan error

func (r localReq) Wait() error { return <-r }

func (c *localComm) submit(job func() error) Request {
	r := make(localReq, 1)
	c.jobs <- func() { r <- job() }
	return r
}

// collective runs one collective in this rank's order and copies its result
// into buf.
func collective[T any](c *localComm, buf []T, combine func([]any) (any, error)) Request {
	return c.submit(func() error {
		res, err := c.g.meet(c.rank, buf, combine)
		if err != nil {
			return err
		}
		copy(buf, res.([]T))
		return nil
	})
}

func (c *localComm) Rank() int    { return c.rank }
func (c *localComm) Size() int    { return c.g.n }
func (c *localComm) Name() string { return fmt.Sprintf("local (%d goroutine ranks)", c.g.n) }

func (c *localComm) StartAllreduceSum(buf []float32) (Request, error) {
	return collective(c, buf, sum[float32]("allreduce")), nil
}

func (c *localComm) AllreduceSum(buf []float32) error {
	r, _ := c.StartAllreduceSum(buf)
	return r.Wait()
}

func (c *localComm) AllreduceSumFloat64(buf []float64) error {
	return collective(c, buf, sum[float64]("allreduce")).Wait()
}

func (c *localComm) Broadcast(buf []float32, root int) error {
	if root < 0 || root >= c.g.n {
		return fmt.Errorf("dist: broadcast from rank %d in a world of %d", root, c.g.n)
	}
	return collective(c, buf, bcast[float32]("broadcast", root)).Wait()
}

func (c *localComm) BroadcastBytes(buf []byte, root int) error {
	if root < 0 || root >= c.g.n {
		return fmt.Errorf("dist: broadcast from rank %d in a world of %d", root, c.g.n)
	}
	return collective(c, buf, bcast[byte]("broadcast", root)).Wait()
}

func (c *localComm) Barrier() error {
	return c.submit(func() error {
		_, err := c.g.meet(c.rank, nil, func([]any) (any, error) { return nil, nil })
		return err
	}).Wait()
}

func (c *localComm) Close() error {
	c.once.Do(func() {
		close(c.jobs)
		c.g.leave(fmt.Errorf("dist: rank %d has closed its communicator; the collective cannot complete", c.rank))
	})
	return nil
}

func (c *localComm) Abort(reason error) {
	fmt.Fprintf(os.Stderr, "rank %d: %v\n", c.rank, reason)
	c.g.leave(fmt.Errorf("dist: rank %d aborted the job: %w", c.rank, reason))
}
