//go:build stokecuda

package cudaops

/*
#include <stdlib.h>
#include "cublas.h"
int stoke_cuda_library_path(char *buf, int n);
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"gorgonia.org/cu"

	"stoke/gemm"

	"stoke/internal/libfind"
)

// A GEMM's precision is train.precision's gemm.Precision, as the CPU
// engine takes it: cuBLAS treats the float32 inputs as they are (gemm.FP32,
// pedantic: no reduced precision whatever the handle's math mode), rounded
// to TF32 (10 mantissa bits) or to bfloat16 (7), accumulating in float32
// each time (CUBLAS_COMPUTE_32F_PEDANTIC, _FAST_TF32, _FAST_16BF). cublas.h's
// STOKE_GEMM_* and kernels.cu's prec argument use its values; these arrays
// fail to compile if they part.
var (
	_ [C.STOKE_GEMM_FP32 - int(gemm.FP32)]struct{} = [0]struct{}{}
	_ [C.STOKE_GEMM_TF32 - int(gemm.TF32)]struct{} = [0]struct{}{}
	_ [C.STOKE_GEMM_BF16 - int(gemm.BF16)]struct{} = [0]struct{}{}
)

// cublasMajors are the sonames tried, newest first.
var cublasMajors = []int{13, 12, 11}

// CublasCandidates lists where cuBLAS is looked for, in order, when the
// setting (cuda.cublas) names no file: the dynamic loader's own search
// (LD_LIBRARY_PATH, the ld.so cache) by soname; the driver's folder; the
// CUDA toolkit's usual folders; and the nvidia/*/lib folders of Python
// environments, where PyTorch's pip wheels put it. setting, when not empty,
// is the only place: a file, or a folder holding libcublas.so.N.
func CublasCandidates(setting string) []string {
	var out []string
	inDir := func(dir string) {
		for _, m := range cublasMajors {
			out = append(out, filepath.Join(dir, fmt.Sprintf("libcublas.so.%d", m)))
		}
	}
	if setting != "" {
		if st, err := os.Stat(setting); err == nil && st.IsDir() {
			inDir(setting)
		} else {
			out = append(out, setting)
		}
		return out
	}
	for _, m := range cublasMajors {
		out = append(out, fmt.Sprintf("libcublas.so.%d", m))
	}
	if p := driverLibraryPath(); p != "" {
		inDir(filepath.Dir(p))
	}
	for _, d := range libfind.ToolkitDirs() {
		inDir(d)
	}
	// nvidia/cublas/lib (CUDA 11 and 12 wheels), nvidia/cu13/lib (CUDA 13's).
	for _, d := range libfind.WheelDirs("nvidia/cublas/lib", "nvidia/cu1*/lib") {
		inDir(d)
	}
	return libfind.Dedupe(out)
}

// driverLibraryPath is the file libcuda.so.1 was loaded from, or "".
func driverLibraryPath() string {
	buf := make([]byte, 4096)
	if C.stoke_cuda_library_path((*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf))) != 0 {
		return ""
	}
	return C.GoString((*C.char)(unsafe.Pointer(&buf[0])))
}

// NoCublasError says that no usable cuBLAS was found, and where it was
// looked for.
type NoCublasError struct {
	Tried []string // each place and why it failed
}

func (e *NoCublasError) Error() string {
	return "no usable cuBLAS (libcublas.so.13, .12 or .11); looked in:\n  " + strings.Join(e.Tried, "\n  ") +
		"\ninstall it (pip install nvidia-cublas-cu12, or the CUDA toolkit), name it with cuda.cublas (a file or folder), or use cuda.gemm own"
}

// cublasLoads caches loadCublas's answer per setting: the dynamic loader
// keeps one copy of a library anyway, and a setting naming no usable one
// keeps failing the same way.
var cublasLoads struct {
	sync.Mutex
	bySetting map[string]cublasLoaded
}

type cublasLoaded struct {
	path  string
	major int
	err   error
}

// loadCublas loads the first usable cuBLAS among the candidates for setting
// (once per setting per process).
func loadCublas(setting string) (path string, major int, err error) {
	cublasLoads.Lock()
	defer cublasLoads.Unlock()
	if r, ok := cublasLoads.bySetting[setting]; ok {
		return r.path, r.major, r.err
	}
	r := loadCublasFrom(setting)
	if cublasLoads.bySetting == nil {
		cublasLoads.bySetting = map[string]cublasLoaded{}
	}
	cublasLoads.bySetting[setting] = r
	return r.path, r.major, r.err
}

func loadCublasFrom(setting string) cublasLoaded {
	var tried []string
	for _, c := range CublasCandidates(setting) {
		want := 0
		if i := strings.LastIndex(c, ".so."); i >= 0 {
			fmt.Sscanf(c[i+4:], "%d", &want)
		}
		if strings.Contains(c, "/") {
			if _, err := os.Stat(c); err != nil {
				if setting != "" {
					tried = append(tried, fmt.Sprintf("%s: %v", c, err))
				}
				continue // a folder without it: not worth a line each
			}
		}
		cs := C.CString(c)
		buf := make([]byte, 1024)
		var got C.int
		rc := C.stoke_cublas_load(cs, C.int(want), &got, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
		C.free(unsafe.Pointer(cs))
		if rc == 0 {
			return cublasLoaded{path: c, major: int(got)}
		}
		tried = append(tried, fmt.Sprintf("%s: %s", c, C.GoString((*C.char)(unsafe.Pointer(&buf[0])))))
	}
	if len(tried) == 0 {
		tried = append(tried, "no libcublas.so.N in any of: "+strings.Join(CublasCandidates(setting), ", "))
	}
	return cublasLoaded{err: &NoCublasError{Tried: tried}}
}

// Cublas is a cuBLAS handle bound to one stream: its GEMMs are queued there
// in order with the engine's kernels and copies.
type Cublas struct {
	h     unsafe.Pointer
	ws    cu.DevicePtr // the handle's workspace, allocated once
	Path  string       // the library loaded
	Major int          // its major version
}

// cublasWorkspace is the workspace each handle gets (cublasSetWorkspace),
// allocated once with the handle: the 32 MiB NVIDIA's cuBLAS documentation
// recommends for Hopper (4 MiB for older GPUs), so that the GEMMs never
// allocate, and capture into a CUDA graph stays possible.
const cublasWorkspace = 32 << 20

// NewCublas loads cuBLAS (see CublasCandidates for where it looks; setting
// is cuda.cublas) and creates a handle on stream s. The calling thread must
// have the engine's context current.
func NewCublas(setting string, s cu.Stream) (*Cublas, error) {
	path, major, err := loadCublas(setting)
	if err != nil {
		return nil, err
	}
	ws, err := cu.MemAlloc(cublasWorkspace)
	if err != nil {
		return nil, fmt.Errorf("cuBLAS %s: allocating its %d MiB workspace: %w", path, cublasWorkspace>>20, err)
	}
	var h unsafe.Pointer
	if st := C.stoke_cublas_create(&h, unsafe.Pointer(s.C()), C.ulonglong(ws), C.ulonglong(cublasWorkspace)); st != 0 {
		cu.MemFree(ws)
		return nil, fmt.Errorf("cuBLAS %s: cublasCreate / cublasSetStream / cublasSetWorkspace failed: %s", path, cublasStatus(int(st)))
	}
	return &Cublas{h: h, ws: ws, Path: path, Major: major}, nil
}

// Gemm computes C = alpha op(A) op(B) + beta C for row-major float32
// matrices on the device (op(A) is MxK, op(B) KxN, C MxN); batch > 1 runs
// batch products whose operands are sa, sb and sc elements apart.
func (b *Cublas) Gemm(p gemm.Precision, tA, tB bool, M, N, K int, alpha float32, a, bm cu.DevicePtr, beta float32, c cu.DevicePtr,
	batch int, sa, sb, sc int64) error {
	st := C.stoke_cublas_gemm(b.h, C.int(p), cbool(tA), cbool(tB), C.int(M), C.int(N), C.int(K), C.float(alpha),
		C.ulonglong(a), C.ulonglong(bm), C.float(beta), C.ulonglong(c), C.int(batch), C.longlong(sa), C.longlong(sb), C.longlong(sc))
	if st != 0 {
		return fmt.Errorf("cuBLAS GEMM %s %dx%dx%d (batch %d): %s", p, M, N, K, batch, cublasStatus(int(st)))
	}
	return nil
}

// Close destroys the handle (cuBLAS waits for the device first).
func (b *Cublas) Close() error {
	if b.h == nil {
		return nil
	}
	st := C.stoke_cublas_destroy(b.h)
	b.h = nil
	cu.MemFree(b.ws) // cublasDestroy has waited for the device
	if st != 0 {
		return fmt.Errorf("cublasDestroy: %s", cublasStatus(int(st)))
	}
	return nil
}

func cbool(v bool) C.int {
	if v {
		return 1
	}
	return 0
}

// cublasStatus names a cublasStatus_t (cublas_api.h's values).
func cublasStatus(st int) string {
	names := map[int]string{1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
		8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
		14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR"}
	if n, ok := names[st]; ok {
		return fmt.Sprintf("%s (%d)", n, st)
	}
	return fmt.Sprintf("cuBLAS status %d", st)
}
