//go:build unix

package dist

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func init() {
	// Under mpirun: every disagreement ends on both ranks with the
	// message, not in MPI; then a matching allreduce still works.
	workerModes["disagree"] = func(c Comm) error {
		k := Check(c)
		for _, tc := range disagreements {
			err := tc.do(k, c.Rank())
			var m *MismatchError
			if !errors.As(err, &m) {
				return fmt.Errorf("%s: %v, want a MismatchError", tc.name, err)
			}
			fmt.Printf("rank %d: %s: %v\n", c.Rank(), tc.name, err)
		}
		return k.AllreduceSum(make([]float32, 2))
	}
}

func TestMPICollectivesDisagree(t *testing.T) {
	out, _, err := mpirun(t, 2, "disagree", 60*time.Second)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, bad := range []string{"SIGSEGV", "SIGABRT", "MPI Error", "free()", "signal"} {
		if strings.Contains(out, bad) {
			t.Errorf("the output holds %q:\n%s", bad, out)
		}
	}
	for r := range 2 {
		for _, tc := range disagreements {
			for _, w := range tc.want {
				if !strings.Contains(out, fmt.Sprintf("rank %d: %s: ", r, tc.name)) || !strings.Contains(out, w) {
					t.Errorf("rank %d, %s: the output lacks %q:\n%s", r, tc.name, w, out)
				}
			}
		}
		if !strings.Contains(out, fmt.Sprintf("rank %d of 2 ok", r)) {
			t.Errorf("rank %d did not carry on after the mismatches:\n%s", r, out)
		}
	}
}
