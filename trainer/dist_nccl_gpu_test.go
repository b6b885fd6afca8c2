//go:build stokecuda && cgo && unix

package trainer

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"stoke/config"
	"stoke/dist"
)

// ncclUsable skips t unless a CUDA device and NCCL are there
// (scripts/gpu-sim.sh runs it under the stand-ins: libcuda.so.1 and
// libnccl.so.2 on LD_LIBRARY_PATH).
func ncclUsable(t *testing.T) {
	t.Helper()
	if !cudaUsable() {
		t.Skip("no usable CUDA device (scripts/gpu-sim.sh runs this under the stand-in)")
	}
	if err := dist.LoadNCCL(os.Getenv(ncclLibraryEnv)); err != nil {
		t.Skipf("no NCCL (scripts/gpu-sim.sh puts the stand-in on LD_LIBRARY_PATH): %v", err)
	}
}

// TestGPUNCCLMatchesOneProcess: N ranks × batch 4 with train.dist nccl —
// each rank its own CUDA backend, the gradients summed on the device by
// NCCL in several buckets while backward runs, weighted by each rank's
// samples — end with the weights and epoch figures of 1 rank × batch 4N.
// 30 images: with 3 ranks the last global batch (6) is split 4 + 2 + 0, so
// rank 2 steps with an empty slice and a rank with 2 samples weighs half.
// The ranks are goroutines of this process over dist.Local (NCCL's unique
// id travels over it as over MPI); TestMPINCCLTrainMatchesOneProcess runs
// processes under mpirun.
func TestGPUNCCLMatchesOneProcess(t *testing.T) {
	ncclUsable(t)
	gpuRanksMatchOneProcess(t, func(c *config.Config) {
		c.Train.Dist = dist.KindNCCL
		c.Train.DistBucketMB = 0.001 // ~1 KB: one bucket per conv weight, the rest together
	}, func(n int) []string {
		return []string{fmt.Sprintf("data parallel: %d ranks; gradients summed on the GPUs by NCCL", n), "allreduce: NCCL"}
	})
}

// TestGPUAutoChoosesNCCL: train.dist auto on --device cuda with several
// ranks sums on the device when NCCL loads, and says so.
func TestGPUAutoChoosesNCCL(t *testing.T) {
	ncclUsable(t)
	par := tinyConfig(t)
	par.Train.Device = "cuda"
	par.Train.Epochs = 1
	par.Data.BatchSize = 4
	out0, _ := runRanks(t, 2, par, nil)
	if !strings.Contains(out0, "gradients summed on the GPUs by NCCL") {
		t.Errorf("auto on cuda did not choose NCCL:\n%s", out0)
	}
}
