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
// deposits into the result, and returns it.
func (g *localGroup) meet(rank int, v any, combine func([]any) any) any {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.out > 0 { // the previous collective's results are still being taken
		g.cond.Wait()
	}
	g.bufs[rank] = v
	g.in++
	gen := g.gen
	if g.in == g.n {
		g.result = combine(g.bufs)
		g.in, g.out = 0, g.n
		g.gen++
		g.cond.Broadcast()
	}
	for g.gen == gen {
		g.cond.Wait()
	}
	r := g.result
	g.out--
	if g.out == 0 {
		g.cond.Broadcast()
	}
	return r
}

type localReq chan error

func (r localReq) Wait() error { return <-r }

func (c *localComm) submit(job func() error) Request {
	r := make(localReq, 1)
	c.jobs <- func() { r <- job() }
	return r
}

func (c *localComm) Rank() int    { return c.rank }
func (c *localComm) Size() int    { return c.g.n }
func (c *localComm) Name() string { return fmt.Sprintf("local (%d goroutine ranks)", c.g.n) }

func (c *localComm) StartAllreduceSum(buf []float32) (Request, error) {
	return c.submit(func() error {
		sum := c.g.meet(c.rank, buf, func(all []any) any {
			s := make([]float32, len(buf))
			for _, b := range all {
				for i, v := range b.([]float32) {
					s[i] += v
				}
			}
			return s
		}).([]float32)
		copy(buf, sum)
		return nil
	}), nil
}

func (c *localComm) AllreduceSum(buf []float32) error {
	r, _ := c.StartAllreduceSum(buf)
	return r.Wait()
}

func (c *localComm) AllreduceSumFloat64(buf []float64) error {
	return c.submit(func() error {
		sum := c.g.meet(c.rank, buf, func(all []any) any {
			s := make([]float64, len(buf))
			for _, b := range all {
				for i, v := range b.([]float64) {
					s[i] += v
				}
			}
			return s
		}).([]float64)
		copy(buf, sum)
		return nil
	}).Wait()
}

func (c *localComm) Broadcast(buf []float32, root int) error {
	return c.submit(func() error {
		src := c.g.meet(c.rank, buf, func(all []any) any { return append([]float32(nil), all[root].([]float32)...) }).([]float32)
		copy(buf, src)
		return nil
	}).Wait()
}

func (c *localComm) BroadcastBytes(buf []byte, root int) error {
	return c.submit(func() error {
		src := c.g.meet(c.rank, buf, func(all []any) any { return append([]byte(nil), all[root].([]byte)...) }).([]byte)
		copy(buf, src)
		return nil
	}).Wait()
}

func (c *localComm) Barrier() error {
	return c.submit(func() error { c.g.meet(c.rank, nil, func([]any) any { return nil }); return nil }).Wait()
}

func (c *localComm) Close() error {
	c.once.Do(func() { close(c.jobs) })
	return nil
}

func (c *localComm) Abort(reason error) {
	fmt.Fprintf(os.Stderr, "rank %d: %v\n", c.rank, reason)
}
