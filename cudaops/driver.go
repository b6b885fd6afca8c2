//go:build stokecuda

package cudaops

//go:generate ./gen_tramp.sh

/*
#cgo LDFLAGS: -ldl -lpthread
#include <stdlib.h>
#include "driver.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// driverStatus asks driver.c whether the driver loaded and cuInit succeeded.
func driverStatus() error {
	var res C.int
	buf := make([]byte, 512)
	st := C.stoke_cuda_status(&res, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	detail := C.GoString((*C.char)(unsafe.Pointer(&buf[0])))
	switch st {
	case C.STOKE_CUDA_OK:
		return nil
	case C.STOKE_CUDA_NO_LIBRARY:
		return &UnavailableError{Reason: "no NVIDIA driver: libcuda.so.1 cannot be loaded (" + detail + ")"}
	}
	switch r := int(res); r {
	case 34: // CUDA_ERROR_STUB_LIBRARY
		return &UnavailableError{Code: r, Reason: fmt.Sprintf("libcuda.so.1 is NVIDIA's link stub (%s), not a driver: cuInit returned CUDA_ERROR_STUB_LIBRARY (34); put the real driver's library first on the library path", detail)}
	case 100: // CUDA_ERROR_NO_DEVICE
		return &UnavailableError{Code: r, Reason: fmt.Sprintf("the NVIDIA driver (%s) found no CUDA device: cuInit returned CUDA_ERROR_NO_DEVICE (100)", detail)}
	case 999:
		return &UnavailableError{Code: r, Reason: fmt.Sprintf("the NVIDIA driver (%s) failed: cuInit returned CUDA_ERROR_UNKNOWN (999); is the kernel module loaded (nvidia-smi)?", detail)}
	default:
		return &UnavailableError{Code: r, Reason: fmt.Sprintf("cuInit failed with CUDA error %d (%s)", r, detail)}
	}
}
