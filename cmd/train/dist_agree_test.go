//go:build unix

package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Ranks that disagree (docs/distributed.md, "The ranks agree"): two ranks
// started with different settings by mpirun's MPMD syntax
// (`mpirun -np 1 train A : -np 1 train B`) both stop before the first
// step, each printing the setting, both values and the rank; never a
// crash inside MPI (before: MPI_ERR_TRUNCATE, `free(): invalid size` and
// SIGABRT, a SIGSEGV in libmpi, or a silently wrong run).

// mpmdCmd is `mpirun -np 1 train args0 : -np 1 train args1`.
func mpmdCmd(t *testing.T, args0, args1 []string) *exec.Cmd {
	t.Helper()
	base := mpirunCmd(t, 1)            // skips without mpirun or under -race
	exe := base.Args[len(base.Args)-1] // this test binary, as the train command
	full := append([]string{"--allow-run-as-root", "--oversubscribe", "-np", "1", exe}, args0...)
	full = append(append(full, ":", "-np", "1", exe), args1...)
	cmd := exec.Command(base.Path, full...)
	cmd.Env = append(base.Env, "STOKE_TRAIN_MAIN=1") // mpirun hands its environment to the ranks
	cmd.SysProcAttr = base.SysProcAttr
	return cmd
}

// tinySets are two generated datasets of 16 px: 2 classes × 20 images, and
// one of 2 × 24.
var tinySets = sync.OnceValues(func() ([2]string, error) {
	dir, err := quickstartCache() // removed by no one: a temp folder, as the quickstart's
	if err != nil {
		return [2]string{}, err
	}
	var roots [2]string
	for i, n := range []int{20, 24} {
		roots[i] = filepath.Join(dir, fmt.Sprintf("tiny-%d", n))
		if out, err := command("gen-data", "--out", roots[i], "--classes", "2", "--train", fmt.Sprint(n), "--val", "4", "--size", "16").CombinedOutput(); err != nil {
			return roots, fmt.Errorf("gen-data: %v\n%s", err, out)
		}
	}
	return roots, nil
})

func tinyRankArgs(t *testing.T, root, out string, extra ...string) []string {
	return append([]string{"--data", root, "--out", out, "--image-size", "16", "--batch-size", "4", "--epochs", "1",
		"--model.conv", "[{channels: 4, kernel: 3, pool: true}]", "--train.progress", "plain", "--data.workers", "0",
		"--train.dist", "mpi", "--train.dist_timeout", "30"}, extra...)
}

func TestMPIRanksThatDisagreeStop(t *testing.T) {
	mpirunCmd(t, 1) // skips without mpirun or under -race
	sets, err := tinySets()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		rank1  []string // rank 1's flags, after rank 0's
		root1  int      // rank 1's dataset
		want   string
		trains bool // a per-rank setting: the run goes on
	}{
		{"arch", []string{"--model.arch", "resnet20"}, 0, "model.arch is cnn on rank 0 but resnet20 on rank 1", false},
		{"optimizer", []string{"--optim.optimizer", "adamw"}, 0, "optim.optimizer is sgd on rank 0 but adamw on rank 1", false},
		{"dataset size", nil, 1, "file list is 40 train and 8 val images on rank 0 but 48 train and 8 val images on rank 1", false},
		{"lr", []string{"--lr", "0.5"}, 0, "optim.lr is 0.05 on rank 0 but 0.5 on rank 1", false},
		{"seed", []string{"--seed", "2"}, 0, "train.seed is 1 on rank 0 but 2 on rank 1", false},
		{"hflip", []string{"--augment.hflip", "0"}, 0, "augment.hflip is 0.5 on rank 0 but 0 on rank 1", false},
		{"per-rank settings", []string{"--data.workers", "1", "--train.progress", "none", "--train.threads", "1"}, 0, "data parallel: 2 ranks", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := mpmdCmd(t, tinyRankArgs(t, sets[0], filepath.Join(dir, "a")),
				tinyRankArgs(t, sets[tc.root1], filepath.Join(dir, "b"), tc.rank1...))
			t0 := time.Now()
			b, err := cmd.CombinedOutput()
			out := string(b)
			t.Logf("%v, %v: %s", err, time.Since(t0).Round(time.Millisecond), firstLine(out, tc.want))
			for _, bad := range []string{"SIGSEGV", "SIGABRT", "MPI Error", "MPI_ERR", "free()", "malloc", "signal "} {
				if strings.Contains(out, bad) {
					t.Errorf("the output holds %q:\n%s", bad, out)
				}
			}
			if tc.trains {
				if err != nil || !strings.Contains(out, tc.want) {
					t.Fatalf("ranks that differ only in per-rank settings: %v\n%s", err, out)
				}
				return
			}
			if err == nil {
				t.Fatalf("ranks that disagree exited 0:\n%s", out)
			}
			for r := range 2 {
				if !strings.Contains(out, fmt.Sprintf("rank %d of 2: the ranks of this run disagree", r)) {
					t.Errorf("rank %d does not say the ranks disagree:\n%s", r, out)
				}
			}
			if strings.Count(out, tc.want) < 2 {
				t.Errorf("want %q from both ranks:\n%s", tc.want, out)
			}
			if strings.Contains(out, "epoch 1/1 step") {
				t.Errorf("a step was taken:\n%s", out)
			}
		})
	}
}

// TestMPIResumeBatchThatCannotSplit: a one-process run of batch 5 resumed
// on 2 ranks says 5 cannot be split over 2 ranks (before: "data.batch_size
// is 5 in the run but 10 now").
func TestMPIResumeBatchThatCannotSplit(t *testing.T) {
	mpirunCmd(t, 1) // skips without mpirun or under -race
	sets, err := tinySets()
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(t.TempDir(), "run")
	args := tinyRankArgs(t, sets[0], run, "--batch-size", "5", "--train.dist", "none")
	runOrFail(t, command(args...))
	b, err := mpirunCmd(t, 2, "--resume", run, "--epochs", "2", "--train.dist", "mpi").CombinedOutput()
	out := string(b)
	if err == nil {
		t.Fatalf("the resume exited 0:\n%s", out)
	}
	if want := "global batch of 5 images (data.batch_size × ranks, as its checkpoints record it) cannot be split over 2 ranks"; !strings.Contains(out, want) || strings.Contains(out, "but 10 now") {
		t.Fatalf("want %q:\n%s", want, out)
	}
	t.Log(firstLine(out, "cannot be split"))
}
