//go:build stokecuda && cgo && unix

package dist

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	_ "stoke/cudaops" // loads the driver at run time (its trampolines), as train does
)

func init() {
	// Under mpirun, with the stand-ins (cudaops/cudasim: libcuda.so.1 and
	// libnccl.so.2) on LD_LIBRARY_PATH: device buffers, a stream, an
	// allreduce and a broadcast through the binding, across processes.
	workerModes["nccl-device"] = func(c Comm) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ctx, err := cu.Device(0).RetainPrimaryCtx()
		if err != nil {
			return fmt.Errorf("primary context: %w", err)
		}
		if err := cu.SetCurrentContext(ctx); err != nil {
			return err
		}
		n, err := OpenNCCL(c, os.Getenv("STOKE_NCCL_LIB"))
		if err != nil {
			return err
		}
		defer n.Close()
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return err
		}
		defer s.Destroy()
		const count = 3000
		host := make([]float32, count)
		for i := range host {
			host[i] = float32((c.Rank() + 1) * (i % 11))
		}
		buf, err := cu.MemAlloc(4 * count)
		if err != nil {
			return err
		}
		defer cu.MemFree(buf)
		stream := uintptr(unsafe.Pointer(s.C()))
		if err := cu.MemcpyHtoDAsync(buf, unsafe.Pointer(&host[0]), 4*count, s); err != nil {
			return err
		}
		if err := n.AllreduceSum(uintptr(buf), count, stream); err != nil {
			return err
		}
		got := make([]float32, count)
		if err := cu.MemcpyDtoHAsync(unsafe.Pointer(&got[0]), buf, 4*count, s); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		total := float32(c.Size() * (c.Size() + 1) / 2)
		for i, v := range got {
			if v != total*float32(i%11) {
				return fmt.Errorf("rank %d: allreduce sum [%d] = %v, want %v", c.Rank(), i, v, total*float32(i%11))
			}
		}
		// Broadcast from the last rank.
		root := c.Size() - 1
		for i := range host {
			host[i] = float32(c.Rank()*1000 + i)
		}
		if err := cu.MemcpyHtoDAsync(buf, unsafe.Pointer(&host[0]), 4*count, s); err != nil {
			return err
		}
		if err := n.Broadcast(uintptr(buf), count, root, stream); err != nil {
			return err
		}
		if err := cu.MemcpyDtoHAsync(unsafe.Pointer(&got[0]), buf, 4*count, s); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		for i, v := range got {
			if v != float32(root*1000+i) {
				return fmt.Errorf("rank %d: broadcast from %d [%d] = %v, want %v", c.Rank(), root, i, v, float32(root*1000+i))
			}
		}
		return nil
	}
}

// TestMPINCCLOnDevice: the binding against the NCCL stand-in on the driver
// stand-in, 3 processes under mpirun: the id over MPI, device memory, a
// stream, the sum and the broadcast every rank must see. Run by
// scripts/gpu-sim.sh (STOKE_NCCL_LIB names the stand-in, LD_LIBRARY_PATH
// holds it); skips elsewhere.
func TestMPINCCLOnDevice(t *testing.T) {
	lib := os.Getenv("STOKE_NCCL_LIB")
	if lib == "" {
		t.Skip("SKIPPED: set STOKE_NCCL_LIB (scripts/gpu-sim.sh does, with the stand-ins on LD_LIBRARY_PATH)")
	}
	out, took, err := mpirun(t, 3, "nccl-device", 90*time.Second, "STOKE_NCCL_LIB="+lib, "LD_LIBRARY_PATH="+os.Getenv("LD_LIBRARY_PATH"))
	for r := range 3 {
		if !strings.Contains(out, fmt.Sprintf("rank %d of 3 ok (nccl-device)", r)) {
			t.Fatalf("rank %d did not finish (%v, %v):\n%s", r, err, took, out)
		}
	}
	if err != nil || strings.Contains(out, "cudasim: error") {
		t.Fatalf("%v\n%s", err, out)
	}
}
