//go:build stokecuda && cgo && unix

package dist

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func init() {
	// Under mpirun: rank 0 draws the id, MPI carries it, every rank joins;
	// the stand-in refuses an id that is not the one it made.
	workerModes["nccl"] = func(c Comm) error {
		n, err := OpenNCCL(c, os.Getenv("STOKE_NCCL_STANDIN"))
		if err != nil {
			return err
		}
		if n.Rank() != c.Rank() || n.Size() != c.Size() {
			return fmt.Errorf("NCCL rank %d of %d, MPI rank %d of %d", n.Rank(), n.Size(), c.Rank(), c.Size())
		}
		if err := n.AllreduceSum(0, 1, 0); err == nil || !strings.Contains(err.Error(), "world of one") {
			return errors.Join(errors.New("the stand-in's 2-rank allreduce was not refused"), err)
		}
		return n.Close()
	}
}

func buildStandIn(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("SKIPPED: no C compiler to build the NCCL stand-in")
	}
	lib := filepath.Join(t.TempDir(), "libnccl-standin.so.2")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, "testdata/nccl_standin.c").CombinedOutput(); err != nil {
		t.Fatalf("building the stand-in: %v\n%s", err, out)
	}
	return lib
}

// TestMPINCCLIdTravelsOverMPI: on 2 ranks under mpirun, the id rank 0's
// (stand-in) NCCL made reaches rank 1 intact through MPI, and both join.
func TestMPINCCLIdTravelsOverMPI(t *testing.T) {
	lib := buildStandIn(t)
	out, _, err := mpirun(t, 2, "nccl", 60*time.Second, "STOKE_NCCL_STANDIN="+lib)
	if err != nil || !strings.Contains(out, "rank 1 of 2 ok (nccl)") || !strings.Contains(out, "rank 0 of 2 ok (nccl)") {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestNCCLMissingLibrarySaysWhat(t *testing.T) {
	// A name of its own: the process loads NCCL once, and the stand-in test may run first.
	_, err := openNCCLFresh(t, "libnccl-that-is-not-there.so.2")
	if err == nil || !strings.Contains(err.Error(), "libnccl-that-is-not-there.so.2") || !strings.Contains(err.Error(), "train.dist mpi") {
		t.Fatalf("err = %v, want the library named and the way out", err)
	}
}

// openNCCLFresh resets the process's NCCL load so that one test can load
// another library (tests only: a real process loads one NCCL).
func openNCCLFresh(t *testing.T, lib string) (*NCCL, error) {
	t.Helper()
	ncclLoad.Lock()
	ncclLoad.done, ncclLoad.setting, ncclLoad.path, ncclLoad.err = false, "", "", nil
	ncclLoad.Unlock()
	return OpenNCCL(Single{}, lib)
}

// TestNCCLStandIn runs the binding against a CPU stand-in for libnccl.so.2
// (testdata/nccl_standin.c, built here with the C compiler): the unique id
// made, broadcast and passed by value, the communicator, an allreduce and
// a broadcast on "device" memory, the error string of a refused call, and
// the destroy. What it cannot show — real GPUs, streams, more than one
// rank — needs a machine with NCCL.
func TestNCCLStandIn(t *testing.T) {
	n, err := openNCCLFresh(t, buildStandIn(t))
	if err != nil {
		t.Fatal(err)
	}
	if n.Rank() != 0 || n.Size() != 1 {
		t.Fatalf("rank %d of %d", n.Rank(), n.Size())
	}
	buf := make([]float32, 5)
	for i := range buf {
		buf[i] = float32(i) + 0.5
	}
	addr := uintptr(unsafe.Pointer(&buf[0])) // the stand-in's "device memory" is host memory
	if err := n.AllreduceSum(addr, len(buf), 0); err != nil {
		t.Fatal(err)
	}
	if err := n.Broadcast(addr, len(buf), 0, 0); err != nil {
		t.Fatal(err)
	}
	for i, v := range buf {
		if v != float32(i)+0.5 {
			t.Fatalf("buf[%d] = %v after a 1-rank allreduce and broadcast", i, v)
		}
	}
	err = n.Broadcast(addr, len(buf), 1, 0)
	if err == nil || !strings.Contains(err.Error(), "rank 0: ncclBroadcast of 5 floats from rank 1: NCCL error 4: stand-in: root must be rank 0 of 1") {
		t.Fatalf("refused broadcast: err = %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
}
