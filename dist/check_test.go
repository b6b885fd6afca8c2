package dist

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// disagreements are pairs of calls that MPI would run on buffers of
// different sizes: each rank runs do(c, rank), and every rank must get the
// same *MismatchError, whose message holds want.
var disagreements = []struct {
	name string
	do   func(c Comm, rank int) error
	want []string
}{
	{"allreduce sizes", func(c Comm, r int) error { return c.AllreduceSum(make([]float32, 3+2*r)) },
		[]string{"rank 0: allreduce of 3 floats", "rank 1: allreduce of 5 floats"}},
	{"broadcast against allreduce", func(c Comm, r int) error {
		if r == 0 {
			return c.Broadcast(make([]float32, 4), 0)
		}
		return c.AllreduceSumFloat64(make([]float64, 4))
	}, []string{"rank 0: broadcast of 4 floats from rank 0", "rank 1: allreduce of 4 doubles"}},
	{"bytes from another root", func(c Comm, r int) error { return c.BroadcastBytes(make([]byte, 8), r) },
		[]string{"rank 0: broadcast of 8 bytes from rank 0", "rank 1: broadcast of 8 bytes from rank 1"}},
	{"gradient buckets of another layout", func(c Comm, r int) error {
		b := NewBuckets(c, []int{10, 20 + r}, 1<<20)
		b.Begin(1)
		b.Ready(1, make([]float32, 20+r))
		b.Ready(0, make([]float32, 10))
		return b.Wait()
	}, []string{"rank 0: a training step's gradient allreduces, 31 floats", "rank 1: a training step's gradient allreduces, 32 floats"}},
	{"a step against an epoch's sums", func(c Comm, r int) error {
		if r == 0 {
			return c.AllreduceSumFloat64(make([]float64, 3))
		}
		b := NewBuckets(c, []int{10}, 1<<20)
		b.Begin(1)
		b.Ready(0, make([]float32, 10))
		return b.Wait()
	}, []string{"rank 0: allreduce of 3 doubles", "rank 1: a training step's gradient allreduces, 11 floats"}},
}

// checkDisagreement runs one case on comms (rank r on comms[r]) and
// returns what went wrong, if anything.
func checkDisagreement(comms []Comm, do func(Comm, int) error, want []string) error {
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = do(c, r) }()
	}
	wg.Wait()
	var bad []error
	for r, err := range errs {
		var m *MismatchError
		if !errors.As(err, &m) {
			bad = append(bad, fmt.Errorf("rank %d: %v, want a MismatchError", r, err))
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				bad = append(bad, fmt.Errorf("rank %d: %q lacks %q", r, err, w))
			}
		}
		if err.Error() != errs[0].Error() {
			bad = append(bad, fmt.Errorf("rank %d says %q, rank 0 %q", r, err, errs[0]))
		}
	}
	return errors.Join(bad...)
}

// TestCheckedCollectivesDisagree: over Check, collectives the ranks call
// differently end on every rank with the same error naming each rank's
// call, and the communicator goes on working (the collective was not run).
func TestCheckedCollectivesDisagree(t *testing.T) {
	for _, tc := range disagreements {
		t.Run(tc.name, func(t *testing.T) {
			local := Local(2)
			comms := []Comm{Check(local[0]), Check(local[1])}
			defer local[0].Close()
			defer local[1].Close()
			if err := checkDisagreement(comms, tc.do, tc.want); err != nil {
				t.Fatal(err)
			}
			if err := checkDisagreement(comms, func(c Comm, _ int) error { return c.AllreduceSum(make([]float32, 2)) }, nil); err == nil || !strings.Contains(err.Error(), "<nil>, want") {
				t.Fatalf("after the mismatch, a matching allreduce: %v", err)
			}
		})
	}
}

// TestCheckedBucketsAgree: the same layout on every rank sums as before.
func TestCheckedBucketsAgree(t *testing.T) {
	local := Local(2)
	defer local[0].Close()
	defer local[1].Close()
	var wg sync.WaitGroup
	got := make([][]float32, 2)
	errs := make([]error, 2)
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := NewBuckets(Check(local[r]), []int{3, 2}, 8) // two buckets
			for range 3 {
				g0, g1 := []float32{1, 2, 3}, []float32{float32(r), 1}
				b.Begin(1 + r)
				b.Ready(1, g1)
				b.Ready(0, g0)
				if errs[r] = b.Wait(); errs[r] != nil {
					return
				}
				got[r] = append(g0, g1...)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	// (1·[1 2 3] + 2·[1 2 3]) / 3 and (1·[0 1] + 2·[1 1]) / 3.
	want := []float32{1, 2, 3, 2.0 / 3, 1}
	for r := range 2 {
		if fmt.Sprint(got[r]) != fmt.Sprint(want) {
			t.Errorf("rank %d: %v, want %v", r, got[r], want)
		}
	}
}

// TestAgree: ranks with the same text agree; one with another text is
// named on every rank, with its text and rank 0's.
func TestAgree(t *testing.T) {
	local := Local(3)
	for _, c := range local {
		defer c.Close()
	}
	texts := []string{"a: 1\n", "a: 1\n", "a: 2\n"}
	res := make([]*Disagreement, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); res[r], errs[r] = Agree(Check(local[r]), []byte(texts[r])) }()
	}
	wg.Wait()
	for r := range 3 {
		d := res[r]
		if errs[r] != nil || d == nil || fmt.Sprint(d.Ranks) != "[2]" || string(d.Rank0) != texts[0] || string(d.Texts[2]) != texts[2] {
			t.Errorf("rank %d: %+v, %v", r, d, errs[r])
		}
	}
}
