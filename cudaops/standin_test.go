//go:build stokecuda

package cudaops

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"gorgonia.org/cu"
)

// Tests of the CPU stand-in for the driver itself (cudaops/cudasim): that
// it has the documented semantics the GPU tests rely on, and reports what it
// exists to catch. They skip on a real GPU.

func openStandInOrSkip(t *testing.T) *Device {
	t.Helper()
	d := openOrSkip(t)
	if !d.Simulated() {
		t.Skip("tests the CPU stand-in (scripts/gpu-sim.sh), not a GPU")
	}
	return d
}

// busy queues ~0.1 s of sgemm on g's stream (384^3 on the stand-in).
func busy(t *testing.T, g *gpuEngine) {
	t.Helper()
	const n = 384
	var bufs [3]buffer
	for k := range bufs {
		b, err := g.alloc(n * n)
		if err != nil {
			t.Fatal(err)
		}
		bufs[k] = b
	}
	if err := g.sgemm(false, false, n, n, n, bufs[0], bufs[1], bufs[2]); err != nil {
		t.Fatal(err)
	}
}

// TestStandInCopySemantics: an async copy from pinned memory reads the host
// bytes when it runs (after the work queued before it), one from pageable
// memory reads them at the call (staged), as the driver documents.
func TestStandInCopySemantics(t *testing.T) {
	d := openStandInOrSkip(t)
	const n = 4096
	pinned, err := d.Pinned().Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Pinned().Free(pinned)
	withEngine(t, d, cu.NonBlocking, func(s cu.Stream, g *gpuEngine) error {
		dst, err := cu.MemAlloc(n)
		if err != nil {
			return err
		}
		defer cu.MemFree(dst)
		for _, kind := range []string{"pinned", "pageable"} {
			src := pinned
			if kind == "pageable" {
				src = make([]byte, n)
			}
			for i := range src {
				src[i] = 1
			}
			busy(t, g) // the copy below runs only after this
			if err := cu.MemcpyHtoDAsync(dst, unsafe.Pointer(&src[0]), n, s); err != nil {
				return err
			}
			for i := range src { // before the copy ran
				src[i] = 2
			}
			if err := s.Synchronize(); err != nil {
				return err
			}
			back := make([]byte, n)
			if err := cu.MemcpyDtoH(unsafe.Pointer(&back[0]), dst, n); err != nil {
				return err
			}
			want := byte(2) // pinned: read when the copy ran
			if kind == "pageable" {
				want = 1 // staged at the call
			}
			if back[0] != want || back[n-1] != want {
				t.Errorf("%s: the device got %d, want %d", kind, back[0], want)
			}
		}
		return nil
	})
}

// TestStandInNullStream: a synchronous copy (the legacy NULL stream) waits
// for the work of a blocking stream, not for a CU_STREAM_NON_BLOCKING one.
func TestStandInNullStream(t *testing.T) {
	d := openStandInOrSkip(t)
	for _, tc := range []struct {
		flags cu.StreamFlags
		waits bool
	}{{cu.DefaultStream, true}, {cu.NonBlocking, false}} {
		withEngine(t, d, tc.flags, func(s cu.Stream, g *gpuEngine) error {
			dst, err := cu.MemAlloc(64)
			if err != nil {
				return err
			}
			defer cu.MemFree(dst)
			src := make([]byte, 64)
			ev, err := cu.MakeEvent(cu.DefaultEvent)
			if err != nil {
				return err
			}
			defer cu.DestroyEvent(&ev)
			busy(t, g)
			if err := ev.Record(s); err != nil {
				return err
			}
			if err := cu.MemcpyHtoD(dst, unsafe.Pointer(&src[0]), 64); err != nil {
				return err
			}
			done := ev.Query() == nil
			if done != tc.waits {
				t.Errorf("stream flags %v: the stream's work done when cuMemcpyHtoD returned: %v, want %v", tc.flags, done, tc.waits)
			}
			return s.Synchronize()
		})
	}
}

// TestStandInReports runs misuses of the driver in a child process (their
// reports would fail scripts/gpu-sim.sh's check for stand-in errors) and
// expects each to be refused and reported; then a host read of a device
// pointer, which must crash the child.
func TestStandInReports(t *testing.T) {
	switch os.Getenv("STOKE_STANDIN_CHILD") {
	case "misuse":
		standInMisuse(t)
		return
	case "deref":
		d := openStandInOrSkip(t)
		d.do(func() error {
			p, err := cu.MemAlloc(64)
			if err != nil {
				t.Fatal(err)
			}
			host := *(*unsafe.Pointer)(unsafe.Pointer(&p))              // the device address as a host pointer
			t.Logf("read through a device pointer: %d", *(*byte)(host)) // must fault
			return nil
		})
		t.Fatal("a host read of device memory did not fault")
	}
	openStandInOrSkip(t)
	child := func(kind string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStandInReports$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "STOKE_STANDIN_CHILD="+kind)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := child("misuse")
	if err != nil {
		t.Fatalf("misuse child failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"cudasim: error: cuMemcpyHtoD of 64 bytes at device address",
		"cudasim: error: double free: cuMemFree",
		"cudasim: error: launch of sgemm: grid (1,1,1) x block (2048,1,1) exceeds the device's limits",
		"cudasim: error: launch of sgemm: argument 5 is not a pointer into live device memory",
		"cudasim: error: cuMemFreeHost of",
		"cudasim: error: leak: 1 device allocations (256 bytes) not freed when the context was released",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no report %q; the child said:\n%s", want, out)
		}
	}
	out, err = child("deref")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(out, "fault") {
		t.Fatalf("a host read of a device pointer did not crash the child (%v):\n%s", err, out)
	}
	t.Logf("host read of device memory: %s", firstLine(out, "fault"))
}

func firstLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

func standInMisuse(t *testing.T) {
	d, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Simulated() {
		t.Fatal("not the stand-in")
	}
	refused := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: accepted", what)
		} else {
			t.Logf("%s: %v", what, err)
		}
	}
	withEngine(t, d, cu.NonBlocking, func(s cu.Stream, g *gpuEngine) error {
		dp, err := cu.MemAlloc(64)
		if err != nil {
			return err
		}
		src := make([]byte, 64)
		refused("copy past the end", cu.MemcpyHtoD(dp+32, unsafe.Pointer(&src[0]), 64))
		if err := cu.MemFree(dp); err != nil {
			return err
		}
		refused("double free", cu.MemFree(dp))
		a, _ := g.alloc(16)
		refused("2048 threads per block", g.fn["sgemm"].Launch(1, 1, 1, 2048, 1, 1, 0, s, g.ptrs[:9]))
		refused("freed pointer argument", g.launch("sgemm", 1, 1, 1, 256, bl(false), bl(false), i(4), i(4), i(4), uint64(dp), p(a), p(a), i(0)))
		refused("foreign cuMemFreeHost", cu.MemFreeHost(unsafe.Pointer(&src[0])))
		leak, err := cu.MemAlloc(256)
		_ = leak // left allocated: reported at context release
		return err
	})
	// Without a current context on this thread, a call needing one fails.
	runtime.LockOSThread()
	if err := cu.SetCurrentContext(cu.CUContext{}); err != nil {
		t.Fatal(err)
	}
	_, err = cu.MemAlloc(64)
	refused("cuMemAlloc without a current context", err)
	if err != nil && !strings.Contains(strings.ToLower(err.Error()), "context") {
		t.Errorf("cuMemAlloc without a context: %v, want an invalid-context error", err)
	}
	runtime.UnlockOSThread()
	d.Close()
}
