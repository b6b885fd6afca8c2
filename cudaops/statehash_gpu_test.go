//go:build stokecuda

package cudaops

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"stoke/internal/statehash"
	"stoke/model"
)

var updateGPUStateHashes = flag.Bool("update-state-hashes", false, "rewrite testdata/state_hashes_gpu.json for this device")

// TestGPUStateHashesUnchanged is model's TestStateHashesUnchanged on the
// GPU engine: the state after 3 training steps of each statehash case against
// testdata/state_hashes_gpu.json, computed by the code before issue 22's
// refactor (one kernel family per layer, small engine interfaces), which
// must keep it bit for bit. The file holds one set per device: "cudasim"
// for the CPU stand-in (scripts/gpu-sim.sh runs this test), whose kernels
// are kernels.cu compiled for the host without FMA contraction; a real
// GPU (nvcc contracts multiply-adds, and its name is the key) has its
// hashes only once someone ran -update-state-hashes on one, and is skipped
// before that. A deliberate change of rounding regenerates the file with
// -update-state-hashes and says why in its commit.
func TestGPUStateHashesUnchanged(t *testing.T) {
	d := openOrSkip(t)
	key := d.String()
	if d.Simulated() {
		key = "cudasim"
		// sgemm's split-K slices add into C with atomicAdd: on several
		// host threads the order of those additions, and so the bits,
		// follow the threads' timing (resnet18's hashes changed from run
		// to run). On one thread the blocks run in order.
		if !strings.Contains(d.String(), "1 host threads") {
			t.Skipf("the stand-in runs blocks on several host threads (%s), so split-K sums are added in timing order: run with STOKE_CUDASIM_THREADS=1 (scripts/gpu-sim.sh does)", d)
		}
	}
	golden := statehash.ReadGolden(t, filepath.Join("testdata", "state_hashes_gpu.json"), *updateGPUStateHashes)
	if !golden.Has(key) && !*updateGPUStateHashes {
		t.Skipf("%s has no hashes for %q: run with -update-state-hashes on this device to pin them", golden.File, key)
	}
	got := map[string]string{}
	for _, c := range statehash.Cases {
		b, err := NewBackend(d, c.Spec, c.Options(), true, imageNet)
		if err != nil {
			t.Fatal(err)
		}
		c.Train(t, func(in model.Input, lr float32) error {
			_, _, err := runStep(b, in, lr)
			return err
		})
		params, optState := state(t, b)
		b.Close()
		got[c.Name] = statehash.Hash(params, optState)
		t.Logf("%s %s", c.Name, got[c.Name])
	}
	if *updateGPUStateHashes {
		golden.Write(t, key, got)
		return
	}
	golden.Compare(t, key, got)
}
