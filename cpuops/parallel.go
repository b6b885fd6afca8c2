package cpuops

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A job is n items handed out one at a time to up to GOMAXPROCS workers:
// fn(worker, item) runs every item once, worker < the job's worker count.
// The calling goroutine works too, so one core runs everything inline.
type job struct {
	fn   func(worker, item int)
	n    int
	next atomic.Int64

	// The running run: its workers w (the caller's 0 among them) << 16 |
	// the helpers that joined it (1 … w−1 their workers) | closed once it
	// takes no more, in one word that a helper reads at once.
	joined   atomic.Int32
	finished atomic.Int32 // of the helpers that joined, the ones done with it
	wg       sync.WaitGroup
}

const (
	closed     = 1 << 30
	joinedMask = 1<<16 - 1
)

// The helpers. A run posts its job where idle helpers look (post, and
// posted bumped after it), starts a goroutine for each helper it needs
// beyond those spinning, and works on its items itself. A helper done
// with a run spins (yielding its core to any other goroutine ready to run)
// for the next post for up to helperSpin, and then ends: no goroutine
// outlives the last run by more than that, for leak checkers to flag.
// It spins on x86's PAUSE and yields now and then: yielding at every turn
// (runtime.Gosched) took the scheduler's lock often enough to show in a
// profile (2% of a resnet50 step on 2 cores).
//
// Waking a parked goroutine on another core was measured here at about
// 20 µs (a job of two 20 µs items on 2 cores took 47 µs, against 41 on
// one): a step runs hundreds of jobs, many of a few hundred µs, most a
// few µs after the one before. A spinning helper joins a run at once.
var helpers struct {
	post     atomic.Pointer[job]
	posted   atomic.Uint64
	spinning atomic.Int32
}

// helperSpin is how long an idle helper waits for the next job before it
// ends.
const helperSpin = 200 * time.Microsecond

// workers is how many workers a job of n items gets.
func workers(n int) int { return max(1, min(n, runtime.GOMAXPROCS(0))) }

// run does every item of j with w workers and returns when all are done.
// Helpers that join late (the run done before they came) leave at once;
// none touches j after run returns.
func (j *job) run(w int) {
	j.next.Store(0)
	if w <= 1 {
		j.work(0)
		return
	}
	j.finished.Store(0)
	j.wg.Add(w - 1)
	j.joined.Store(int32(w) << 16) // open: j is set up for the helpers that join
	helpers.post.Store(j)
	gen := helpers.posted.Add(1)
	for i := int(helpers.spinning.Load()); i < w-1; i++ {
		go helper(j, gen)
	}
	j.work(0)
	n := j.joined.Or(closed) & joinedMask // no helper joins from here on
	helpers.post.CompareAndSwap(j, nil)   // nor holds j (and its op's buffers) alive
	for range w - 1 - int(n) {
		j.wg.Done() // a place no helper took
	}
	// A helper on its last item is most often done within microseconds:
	// wait for it spinning a little (up to helperSpin) before parking.
	for t0, spin := time.Now(), 0; j.finished.Load() != n; spin++ {
		if spin%256 == 255 && time.Since(t0) > helperSpin {
			break
		}
		spinPause()
	}
	j.wg.Wait()
}

// join gives a helper its worker in the running run of j, or false when
// the run is closed or has all the helpers it takes.
func (j *job) join() (worker int, ok bool) {
	for {
		v := j.joined.Load()
		if v&closed != 0 || v&joinedMask >= v>>16-1 {
			return 0, false
		}
		if j.joined.CompareAndSwap(v, v+1) {
			return int(v&joinedMask) + 1, true
		}
	}
}

// helper works on j's run (posted as gen), then on each job posted while
// it spins.
func helper(j *job, gen uint64) {
	for {
		if worker, ok := j.join(); ok {
			j.work(worker)
			j.finished.Add(1)
			j.wg.Done()
		}
		helpers.spinning.Add(1)
		j = nil
		for t0, spin := time.Now(), 0; ; spin++ {
			if g := helpers.posted.Load(); g != gen {
				if gen, j = g, helpers.post.Load(); j != nil {
					break
				}
			}
			if spin%256 == 255 {
				if time.Since(t0) > helperSpin {
					break
				}
				runtime.Gosched() // let any goroutine ready to run have the core
			}
			spinPause()
		}
		helpers.spinning.Add(-1)
		if j == nil {
			return
		}
	}
}

func (j *job) work(worker int) {
	for {
		i := int(j.next.Add(1) - 1)
		if i >= j.n {
			return
		}
		j.fn(worker, i)
	}
}

// Parallel runs f over [0, n) in contiguous parts of at least minPart
// (up to four a core, handed out as the ops' items are), on the cores the
// ops use and with their helpers, when n makes more than one part: for
// passes outside the ops, such as an optimizer's update.
func Parallel(n, minPart int, f func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), n/max(1, minPart))
	if w <= 1 {
		f(0, n)
		return
	}
	chunk := (n + 4*w - 1) / (4 * w)
	chunk = max(chunk, minPart)
	j := &job{n: (n + chunk - 1) / chunk}
	j.fn = func(_, i int) { f(i*chunk, min(n, (i+1)*chunk)) }
	j.run(w)
}

// grow returns s resized to n, reusing its array when large enough.
func grow[E float32 | uint32](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n)
	}
	return s[:n]
}
