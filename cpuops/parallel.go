package cpuops

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// A job is n items handed out one at a time to up to GOMAXPROCS workers:
// fn(worker, item) runs every item once, worker < the job's worker count.
// The calling goroutine works too, so one core runs everything inline.
type job struct {
	fn   func(worker, item int)
	n    int
	next atomic.Int64
	wg   sync.WaitGroup
}

// workers is how many workers a job of n items gets.
func workers(n int) int { return max(1, min(n, runtime.GOMAXPROCS(0))) }

// run does every item of j with w workers and returns when all are done.
// Helpers are goroutines started per run and gone when it returns (no
// pool outlives a model, for leak checkers to flag); starting one costs
// about a microsecond and allocates nothing (the runtime reuses
// goroutines), against milliseconds of work per run.
func (j *job) run(w int) {
	j.next.Store(0)
	j.wg.Add(w - 1)
	for i := 1; i < w; i++ {
		go j.help(i)
	}
	j.work(0)
	j.wg.Wait()
}

func (j *job) help(worker int) {
	defer j.wg.Done()
	j.work(worker)
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

// grow returns s resized to n, reusing its array when large enough.
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}
