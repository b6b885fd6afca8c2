package cudaops

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestKernelTableIsKernelsCU: the kernel table the GPU engine loads is the
// PTX's .entry lines (ptxEntries), and those are kernels.cu's __global__
// functions, in order: a kernel added to kernels.cu without regenerating
// kernels.ptx (scripts/gen-ptx.sh), or a stale PTX, fails here, on any
// machine, before a GPU ever loads it.
func TestKernelTableIsKernelsCU(t *testing.T) {
	cu, err := os.ReadFile("kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	ptx, err := os.ReadFile("kernels.ptx")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range regexp.MustCompile(`(?m)^__global__ void (\w+)\(`).FindAllSubmatch(cu, -1) {
		want = append(want, string(m[1]))
	}
	got := ptxEntries(string(ptx))
	if len(want) < 20 || !slices.Equal(got, want) {
		t.Errorf("kernels.ptx's entries %v\nkernels.cu's __global__ functions %v", got, want)
	}
}
