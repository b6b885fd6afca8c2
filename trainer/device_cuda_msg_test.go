//go:build stokecuda

package trainer

import (
	"errors"
	"strings"
	"testing"

	"stoke/cudaops"
)

// TestNoGPUSaysWhatToDoNext: a GPU that cannot be used here (no driver, the
// link stub, no device) is reported with the next step: --device cpu, or
// the GPU path on the CPU under the stand-in (scripts/gpu-sim.sh).
func TestNoGPUSaysWhatToDoNext(t *testing.T) {
	ue := &cudaops.UnavailableError{Reason: "no NVIDIA driver: libcuda.so.1 cannot be loaded (libcuda.so.1: cannot open shared object file)"}
	err := cudaUnavailable(ue)
	var got *cudaops.UnavailableError
	if !errors.As(err, &got) || got != ue {
		t.Fatalf("%v does not wrap the UnavailableError", err)
	}
	for _, want := range []string{"device cuda: cuda unavailable: no NVIDIA driver", "--device cpu", "scripts/gpu-sim.sh", "LD_LIBRARY_PATH="} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if other := cudaUnavailable(errors.New("out of memory")); strings.Contains(other.Error(), "gpu-sim") {
		t.Errorf("a failure that is not a missing GPU got the no-GPU advice: %v", other)
	}
}
