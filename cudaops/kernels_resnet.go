//go:build stokecuda

package cudaops

import "fmt"

// The ResNets' kernels (kernels.cu, after normalize_u8) and their launch
// wrappers on the GPU engine. Each wrapper only enqueues work on the
// engine's stream: the caller has made the context current (Device.do) and
// synchronizes when it needs a result on the host. Buffers are devBufs from
// alloc; every size below is in float32 elements. kernels_resnet_test.go
// checks each one against cpuops / model's host functions under the
// stand-in (scripts/gpu-sim.sh) or on a GPU.

func init() { kernelNames = append(kernelNames, resnetKernelNames...) }

var resnetKernelNames = []string{"add_f32"}

// needs checks that each buffer holds at least the elements a kernel will
// touch, so that a wrong shape is an error here rather than a fault on the
// device.
func needs(what string, pairs ...any) error {
	for k := 0; k+1 < len(pairs); k += 2 {
		b, n := pairs[k].(buffer), pairs[k+1].(int)
		if d := b.(devBuf); d.n < n {
			return fmt.Errorf("cudaops: %s: argument %d holds %d floats, needs %d", what, k/2, d.n, n)
		}
	}
	return nil
}

// add is c = a + b over n floats: reads a[0:n) and b[0:n), writes c[0:n).
// c may be a or b (in place: a += b is add(a, b, a, n)); any other overlap
// is not allowed. Used by gorgonia's fan-out Add (the residual's gradient)
// and the residual add's forward.
func (e *gpuEngine) add(a, b, c buffer, n int) error {
	if err := needs("add", a, n, b, n, c, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return e.launch1D("add_f32", n, p(a), p(b), p(c), i(n))
}
