//go:build stokecuda && cgo && unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"stoke/dist"
)

// train.dist nccl under a real mpirun, each rank a process on the CUDA
// driver stand-in with the NCCL stand-in (scripts/gpu-sim.sh puts both on
// LD_LIBRARY_PATH and runs these; they skip elsewhere).

// ncclStandIn skips t unless LD_LIBRARY_PATH holds libcuda.so.1 and
// libnccl.so.2 (the stand-ins, or a GPU machine's), and returns that folder.
func ncclStandIn(t *testing.T) string {
	t.Helper()
	for _, dir := range filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")) {
		_, e1 := os.Stat(filepath.Join(dir, "libcuda.so.1"))
		_, e2 := os.Stat(filepath.Join(dir, dist.DefaultNCCLLibrary))
		if e1 == nil && e2 == nil {
			return dir
		}
	}
	t.Skip("SKIPPED: no folder of LD_LIBRARY_PATH holds libcuda.so.1 and libnccl.so.2 (scripts/gpu-sim.sh runs this under the stand-ins)")
	return ""
}

// TestMPINCCLRanksAreOneRank: under mpirun, N ranks × batch 32 on --device
// cuda with train.dist nccl end with the weights and epoch figures of 1
// process × 32N on the same device, on the small set (200 images) over 2
// epochs: with 2 ranks the last global batch (8) is split 8 + 0, with 3
// ranks (global 96) 8 + 0 + 0, so ranks step with empty slices.
func TestMPINCCLRanksAreOneRank(t *testing.T) {
	ncclStandIn(t)
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	for _, n := range []int{2, 3} {
		one, par := at("one"+string(rune('0'+n))), at("nccl"+string(rune('0'+n)))
		global := []string{"--batch-size", "64"}
		if n == 3 {
			global = []string{"--batch-size", "96"}
		}
		runOrFail(t, command(small(t, one, append(global, "--device", "cuda", "--epochs", "2")...)...))
		out := runOrFail(t, mpirunCmd(t, n, small(t, par, "--batch-size", "32", "--device", "cuda", "--epochs", "2", "--train.dist", "nccl")...))
		if !strings.Contains(out, "gradients summed on the GPUs by NCCL") {
			t.Fatalf("%d ranks: the run does not say NCCL sums its gradients:\n%s", n, out)
		}
		compareRuns(t, "small set, 2 epochs on cuda: "+string(rune('0'+n))+" x 32 with NCCL vs 1 process", par, one, tightTolerance, 0, 1e-6)
	}
}

// TestMPINCCLKilledRankEndsTheJob: SIGKILL one rank of a 2-rank NCCL job
// on the stand-ins: the job ends within seconds, naming rank 1.
func TestMPINCCLKilledRankEndsTheJob(t *testing.T) {
	ncclStandIn(t)
	args, _ := smallArgs(t, "--epochs", "200", "--device", "cuda", "--train.dist", "nccl", "--train.dist_timeout", "10")
	out, took, err := killRankOne(t, mpirunCmd(t, 2, args...))
	t.Logf("job ended %v after rank 1 was killed: %v", took.Round(time.Millisecond), err)
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "rank 1") {
			t.Logf("  %s", strings.TrimSpace(l))
		}
	}
	if err == nil {
		t.Errorf("the job exited 0 after a rank was killed")
	}
	if took > 15*time.Second || !strings.Contains(out, "rank 1") {
		t.Errorf("took %v (want < 15 s) and/or the output does not name rank 1:\n%s", took, out)
	}
}

// TestMPINCCLMissingSaysWhereItLooked: train.dist nccl where the driver
// loads but NCCL does not: every rank stops before a step, listing the
// places it looked and the way out; train.dist auto there sums over MPI
// and says why not NCCL.
func TestMPINCCLMissingSaysWhereItLooked(t *testing.T) {
	sim := ncclStandIn(t)
	for _, c := range dist.NCCLCandidates("") {
		if _, err := os.Stat(c); err == nil {
			t.Skipf("SKIPPED: %s exists on this machine, so NCCL is not missing", c)
		}
	}
	noNCCL := t.TempDir() // the folder's libraries (the driver stand-in's and cuBLAS's) but NCCL
	libs, err := filepath.Glob(filepath.Join(sim, "*.so*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range libs {
		if filepath.Base(lib) == dist.DefaultNCCLLibrary {
			continue
		}
		if err := os.Symlink(lib, filepath.Join(noNCCL, filepath.Base(lib))); err != nil {
			t.Fatal(err)
		}
	}
	args, _ := smallArgs(t, "--device", "cuda", "--train.dist", "nccl")
	cmd := mpirunCmd(t, 2, args...)
	cmd.Env = append(cmd.Env, "LD_LIBRARY_PATH="+noNCCL)
	b, err := cmd.CombinedOutput()
	out := string(b)
	if err == nil || !strings.Contains(out, "no usable NCCL (libnccl.so.2); looked in:") ||
		!strings.Contains(out, "/usr/local/cuda/lib64/libnccl.so.2") || !strings.Contains(out, "use train.dist mpi") {
		t.Fatalf("train.dist nccl without NCCL: %v\n%s", err, out)
	}
	if strings.Contains(out, "epoch 1/") {
		t.Errorf("it trained:\n%s", out)
	}

	// train.dist auto on cuda there: the host path over MPI, saying why not NCCL.
	args, _ = smallArgs(t, "--device", "cuda", "--epochs", "1")
	cmd = mpirunCmd(t, 2, args...)
	cmd.Env = append(cmd.Env, "LD_LIBRARY_PATH="+noNCCL)
	b, err = cmd.CombinedOutput()
	out = string(b)
	if err != nil || !strings.Contains(out, "data parallel: 2 ranks over mpi") || !strings.Contains(out, "(not NCCL: libnccl.so.2 does not load on 2 of the 2 ranks)") {
		t.Fatalf("train.dist auto without NCCL: %v\n%s", err, out)
	}
}
