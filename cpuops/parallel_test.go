package cpuops

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestJobRunsEachItemOnce: a job reused run after run, at several core
// counts and from several goroutines at once (each with its own job, all
// sharing the helpers), runs every item exactly once per run, each on a
// worker below the run's count that no other goroutine holds meanwhile
// (the workers index scratch), and every item is done when run returns.
// Each run sets a new fn, so that under -race a helper still reading the
// job of a run that returned is a reported race.
func TestJobRunsEachItemOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 3, 8} {
		t.Run(fmt.Sprintf("procs%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			var wg sync.WaitGroup
			errs := make(chan error, 3)
			for g := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var j job
					for r := range 200 {
						n := 1 + (r*7+g)%23
						w := workers(n)
						counts := make([]atomic.Int32, n)
						var held [8]atomic.Int32
						var bad atomic.Int32
						j.fn = func(worker, item int) {
							if worker < 0 || worker >= w || held[worker].Add(1) != 1 {
								bad.Add(1)
							}
							counts[item].Add(1)
							for range 100 * (item % 3) {
								spinPause()
							}
							held[worker].Add(-1)
						}
						j.n = n
						j.run(w)
						for i := range counts {
							if c := counts[i].Load(); c != 1 {
								errs <- fmt.Errorf("goroutine %d run %d (%d items, %d workers): item %d ran %d times", g, r, n, w, i, c)
								return
							}
						}
						if bad.Load() != 0 {
							errs <- fmt.Errorf("goroutine %d run %d: a worker out of range or held twice at once", g, r)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestParallelCoversEachOnce: Parallel's parts cover [0, n) once, in
// contiguous parts of at least minPart (the last may be shorter), on
// any core count.
func TestParallelCoversEachOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 8} {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		for _, c := range [][2]int{{0, 4}, {5, 8}, {100, 1}, {1000, 64}, {1 << 16, 1 << 10}, {12345, 100}} {
			n, minPart := c[0], c[1]
			seen := make([]atomic.Int32, n)
			var short atomic.Int32
			Parallel(n, minPart, func(lo, hi int) {
				if hi-lo < minPart && hi != n {
					short.Add(1)
				}
				for i := lo; i < hi; i++ {
					seen[i].Add(1)
				}
			})
			for i := range seen {
				if s := seen[i].Load(); s != 1 {
					t.Fatalf("procs %d n %d minPart %d: element %d covered %d times", procs, n, minPart, i, s)
				}
			}
			if short.Load() != 0 {
				t.Errorf("procs %d n %d minPart %d: a part shorter than minPart before the last", procs, n, minPart)
			}
		}
	}
}
