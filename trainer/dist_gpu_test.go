package trainer

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"stoke/config"
	"stoke/dist"
)

// TestGPUDataParallelMatchesOneProcess is TestDataParallelMatchesOneProcess
// on --device cuda: N ranks × batch 4, each with its own CUDA backend
// whose gradients are summed on host copies between backward and the
// update, end with the weights and epoch figures of 1 rank × batch 4N on
// the same device. With 3 ranks the last global batch (6) is split
// 4 + 2 + 0: rank 2 steps with no samples. Skipped without a usable CUDA
// device (scripts/gpu-sim.sh runs it under the stand-in).
func TestGPUDataParallelMatchesOneProcess(t *testing.T) {
	if !cudaUsable() {
		t.Skip("no usable CUDA device (a CPU build, or no GPU; scripts/gpu-sim.sh runs this under the stand-in)")
	}
	gpuRanksMatchOneProcess(t, func(c *config.Config) {
		c.Train.Dist = dist.KindMPI // the host path (auto would choose NCCL where it loads)
	}, func(n int) []string { return []string{fmt.Sprintf("data parallel: %d ranks", n)} })
}

// gpuRanksMatchOneProcess runs 2 and 3 ranks × batch 4 on --device cuda
// (tune sets the sync) against 1 rank × batch 4N (sameAsOneRank); rank
// 0's output must hold each of want(N).
func gpuRanksMatchOneProcess(t *testing.T, tune func(*config.Config), want func(n int) []string) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d ranks", n), func(t *testing.T) {
			one := tinyConfig(t)
			one.Train.Device = "cuda"
			one.Data.BatchSize = 4 * n
			if _, err := Run(context.Background(), one, Options{Out: new(bytes.Buffer)}); err != nil {
				t.Fatal(err)
			}
			par := tinyConfig(t)
			par.Train.Device = "cuda"
			par.Data.BatchSize = 4
			tune(&par)
			out0, _ := runRanks(t, n, par, nil)
			for _, w := range want(n) {
				if !strings.Contains(out0, w) {
					t.Errorf("rank 0's output lacks %q:\n%s", w, out0)
				}
			}
			sameAsOneRank(t, n, par, one)
		})
	}
}

// TestNCCLIsRefusedClearly: train.dist nccl on --device cpu names the
// field, why (NCCL sums on GPUs) and what to use instead, before a step is
// taken.
func TestNCCLIsRefusedClearly(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Dist = dist.KindNCCL
	refusedOnEveryRank(t, c, "train.dist nccl", "use train.dist mpi")
}

// refusedOnEveryRank runs c on 2 in-process ranks and wants each to fail
// with an error that holds every one of want.
func refusedOnEveryRank(t *testing.T, c config.Config, want ...string) {
	t.Helper()
	comms := dist.Local(2)
	errs := make(chan error, 2)
	for r := range 2 {
		go func() {
			defer comms[r].Close()
			_, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer), Comm: comms[r]})
			errs <- err
		}()
	}
	for range 2 {
		err := <-errs
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error %v, want one holding %q", err, w)
			}
		}
	}
}

// TestGPUGraphsOnRefusedWithDist: cuda.graphs on with data-parallel ranks
// on --device cuda is refused on every rank, naming both settings and the
// way out, since a data-parallel step waits for the host; auto trains
// (TestGPUDataParallelMatchesOneProcess: its steps launch kernel by kernel).
func TestGPUGraphsOnRefusedWithDist(t *testing.T) {
	if !cudaUsable() {
		t.Skip("no usable CUDA device (a CPU build, or no GPU; scripts/gpu-sim.sh runs this under the stand-in)")
	}
	c := tinyConfig(t)
	c.Train.Device = "cuda"
	c.Train.Dist = dist.KindMPI
	c.Cuda.Graphs = "on"
	refusedOnEveryRank(t, c, "cuda.graphs on with train.dist mpi", "use cuda.graphs auto")
}
