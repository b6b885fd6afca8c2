//go:build unix

// The MPI tests launch mpirun in a process group of their own (Setpgid):
// Open MPI runs on Unix only.

package dist

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestDetect(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		name string
		env  func(string) string
		want Launch
		err  string
	}{
		{"none", env(), Launch{Size: 1, LocalSize: 1}, ""},
		{"mpirun", env("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_RANK", "1", "OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
			Launch{Launcher: "mpirun", Rank: 1, Size: 4, LocalRank: 1, LocalSize: 2}, ""},
		{"srun", env("PMIX_RANK", "2", "SLURM_NTASKS", "3", "SLURM_LOCALID", "0"),
			Launch{Launcher: "srun", Rank: 2, Size: 3, LocalSize: 1}, ""},
		{"torchrun", env("RANK", "3", "WORLD_SIZE", "8", "LOCAL_RANK", "3", "LOCAL_WORLD_SIZE", "4", "MASTER_ADDR", "node0", "MASTER_PORT", "29500"),
			Launch{Launcher: "torchrun", Rank: 3, Size: 8, LocalRank: 3, LocalSize: 4, MasterAddr: "node0:29500"}, ""},
		{"mpirun wins over torchrun", env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "RANK", "5", "WORLD_SIZE", "8"),
			Launch{Launcher: "mpirun", Size: 2, LocalSize: 1}, ""},
		{"bad number", env("OMPI_COMM_WORLD_RANK", "x", "OMPI_COMM_WORLD_SIZE", "2"), Launch{}, `OMPI_COMM_WORLD_RANK="x"`},
		{"rank past size", env("RANK", "2", "WORLD_SIZE", "2"), Launch{}, "rank 2 of 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Detect(tc.env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Detect = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestOpenKinds(t *testing.T) {
	c, err := Open(KindAuto, Launch{Size: 1}, Options{})
	if err != nil || c.Size() != 1 || c.Name() != "single" {
		t.Fatalf("auto without a launcher: %v, %v", c, err)
	}
	_, err = Open(KindAuto, Launch{Launcher: "torchrun", Rank: 0, Size: 2}, Options{})
	if err == nil || !strings.Contains(err.Error(), "mpirun -np 2") {
		t.Fatalf("torchrun world: err = %v, want advice to use mpirun", err)
	}
	_, err = Open("gloo", Launch{Size: 1}, Options{})
	if err == nil || !strings.Contains(err.Error(), "auto, none, mpi or nccl") {
		t.Fatalf("unknown kind: err = %v", err)
	}
}

func TestMPIMissingLibrarySaysWhat(t *testing.T) {
	_, err := OpenMPI(Options{Library: "libmpi-that-is-not-there.so.40"})
	if err == nil {
		t.Fatal("OpenMPI of a missing library succeeded")
	}
	for _, want := range []string{"libmpi-that-is-not-there.so.40", "apt-get install", "mpirun"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// exercise runs the collectives every communicator must get right, on
// rank's view of the world, and returns the first thing that is wrong.
func exercise(c Comm) error {
	r, n := c.Rank(), c.Size()
	// Sums: rank r contributes (r+1)*(i+1); the sum is (i+1)*n(n+1)/2.
	tri := float32(n * (n + 1) / 2)
	buf := make([]float32, 1000)
	for i := range buf {
		buf[i] = float32((r + 1) * (i + 1))
	}
	if err := c.AllreduceSum(buf); err != nil {
		return err
	}
	for i, v := range buf {
		if v != tri*float32(i+1) {
			return fmt.Errorf("rank %d: allreduce [%d] = %v, want %v", r, i, v, tri*float32(i+1))
		}
	}
	// Several in flight at once, waited in reverse.
	var reqs []Request
	var bufs [][]float32
	for k := range 4 {
		b := make([]float32, 10+k*1000)
		for i := range b {
			b[i] = float32(r + k)
		}
		req, err := c.StartAllreduceSum(b)
		if err != nil {
			return err
		}
		reqs, bufs = append(reqs, req), append(bufs, b)
	}
	for k := len(reqs) - 1; k >= 0; k-- {
		if err := reqs[k].Wait(); err != nil {
			return err
		}
		want := tri - float32(n) + float32(n*k)
		for i, v := range bufs[k] {
			if v != want {
				return fmt.Errorf("rank %d: bucket %d [%d] = %v, want %v", r, k, i, v, want)
			}
		}
	}
	d := []float64{1e-9 * float64(r+1), float64(r)}
	if err := c.AllreduceSumFloat64(d); err != nil {
		return err
	}
	if want := 1e-9 * float64(tri); d[0] != want && (d[0]-want)/want > 1e-15 {
		return fmt.Errorf("rank %d: float64 allreduce = %v, want %v", r, d[0], want)
	}
	root := n - 1
	b := []float32{float32(r), float32(r * 2)}
	if err := c.Broadcast(b, root); err != nil {
		return err
	}
	if b[0] != float32(root) || b[1] != float32(2*root) {
		return fmt.Errorf("rank %d: broadcast got %v, want rank %d's", r, b, root)
	}
	id := make([]byte, 128)
	if r == 0 {
		for i := range id {
			id[i] = byte(i * 7)
		}
	}
	if err := c.BroadcastBytes(id, 0); err != nil {
		return err
	}
	for i, v := range id {
		if v != byte(i*7) {
			return fmt.Errorf("rank %d: broadcast bytes [%d] = %d", r, i, v)
		}
	}
	return c.Barrier()
}

func TestSingle(t *testing.T) {
	if err := exercise(Single{}); err != nil {
		t.Fatal(err)
	}
}

func TestLocal(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		cs := Local(n)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for r, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[r] = exercise(c)
				c.Close()
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("%d ranks: %v", n, err)
		}
	}
}

// mpirun runs this test binary under mpirun -np n with STOKE_DIST_WORKER
// set to mode, and returns its output and how long it took.
func mpirun(t *testing.T, n int, mode string, timeout time.Duration, env ...string) (string, time.Duration, error) {
	t.Helper()
	mpi, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("SKIPPED: mpirun is not installed (Debian: apt-get install openmpi-bin libopenmpi-dev); the MPI communicator is untested")
	}
	args := []string{"--allow-run-as-root", "--oversubscribe", "-np", fmt.Sprint(n), "-x", "STOKE_DIST_WORKER=" + mode}
	for _, e := range env {
		args = append(args, "-x", e)
	}
	cmd := exec.Command(mpi, append(args, os.Args[0], "-test.run=^TestMPIWorker$", "-test.v")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t0 := time.Now()
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return string(out), time.Since(t0), fmt.Errorf("mpirun still running after %v (killed): a hang", timeout)
	}
	return string(out), time.Since(t0), err
}

// workerModes are more TestMPIWorker bodies, from files with build tags.
var workerModes = map[string]func(Comm) error{}

// TestMPIWorker is the body of one rank, when run by mpirun (TestMPI*).
func TestMPIWorker(t *testing.T) {
	mode := os.Getenv("STOKE_DIST_WORKER")
	if mode == "" {
		t.Skip("run by TestMPI under mpirun")
	}
	c, err := OpenMPI(Options{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if f := workerModes[mode]; f != nil {
		if err := f(c); err != nil {
			c.Abort(err)
		}
		fmt.Printf("rank %d of %d ok (%s)\n", c.Rank(), c.Size(), mode)
		c.Close()
		return
	}
	switch mode {
	case "collectives":
		if err := exercise(c); err != nil {
			c.Abort(err)
		}
		fmt.Printf("rank %d of %d ok (%s)\n", c.Rank(), c.Size(), c.Name())
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	case "killed":
		if c.Rank() == 1 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		for { // rank 0 goes on summing with a rank that is gone
			if err := c.AllreduceSum(make([]float32, 10)); err != nil {
				c.Abort(err)
			}
		}
	case "stuck":
		if c.Rank() == 1 {
			time.Sleep(time.Minute) // alive but never joins the collective
		}
		if err := c.AllreduceSum(make([]float32, 10)); err != nil {
			c.Abort(err)
		}
		t.Fatal("the allreduce with a stuck rank returned")
	}
}

func TestMPICollectives(t *testing.T) {
	out, _, err := mpirun(t, 2, "collectives", 60*time.Second)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for r := range 2 {
		if !strings.Contains(out, fmt.Sprintf("rank %d of 2 ok", r)) {
			t.Errorf("rank %d did not report ok:\n%s", r, out)
		}
	}
}

func TestMPIKilledRankEndsTheJob(t *testing.T) {
	out, took, err := mpirun(t, 2, "killed", 60*time.Second)
	if err == nil {
		t.Fatalf("the job with a killed rank exited 0:\n%s", out)
	}
	if took > 20*time.Second || !strings.Contains(out, "rank 1") {
		t.Fatalf("took %v (want < 20 s), output should name rank 1:\n%s", took, out)
	}
	t.Logf("ended in %v:\n%s", took.Round(time.Millisecond), out)
}

func TestMPIStuckRankTimesOut(t *testing.T) {
	out, took, err := mpirun(t, 2, "stuck", 60*time.Second)
	if err == nil {
		t.Fatalf("the job with a stuck rank exited 0:\n%s", out)
	}
	if !strings.Contains(out, "rank 0 of 2: rank 0: allreduce of 10 floats: timed out") || took > 30*time.Second {
		t.Fatalf("took %v; want rank 0's timeout named within 30 s:\n%s", took, out)
	}
	t.Logf("ended in %v:\n%s", took.Round(time.Millisecond), out)
}

// A rank that returns (closes) or aborts while its peers wait in a
// collective fails their collective instead of leaving them waiting for
// ever; buffers of different lengths are an error, not a panic.
func TestLocalPeerLeaves(t *testing.T) {
	for _, leave := range []string{"close", "abort"} {
		cs := Local(3)
		errs := make(chan error, 2)
		for _, c := range cs[1:] {
			go func() { errs <- c.AllreduceSum(make([]float32, 4)) }()
		}
		if leave == "close" {
			cs[0].Close()
		} else {
			cs[0].Abort(errors.New("test abort"))
		}
		for range 2 {
			select {
			case err := <-errs:
				if err == nil || !strings.Contains(err.Error(), "rank 0") {
					t.Errorf("%s: a peer's collective returned %v, want an error naming rank 0", leave, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: a peer is still waiting 10 s after rank 0 left", leave)
			}
		}
		for _, c := range cs {
			c.Close()
		}
	}

	cs := Local(2)
	errs := make(chan error, 2)
	for r, c := range cs {
		go func() { errs <- c.AllreduceSum(make([]float32, 4+r)) }()
	}
	for range 2 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "elements") {
			t.Errorf("allreduce over 4 and 5 elements: %v, want an error naming the lengths", err)
		}
	}
	// The world still works after a caller's error.
	for r, c := range cs {
		go func() {
			b := []float32{float32(r + 1)}
			err := c.AllreduceSum(b)
			if err == nil && b[0] != 3 {
				err = fmt.Errorf("sum %v, want 3", b[0])
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
