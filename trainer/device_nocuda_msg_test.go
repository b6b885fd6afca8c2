//go:build !stokecuda

package trainer

import (
	"strings"
	"testing"
)

// TestNoCUDABuildNamesTheRealSteps: the default build's refusal of
// --device cuda names the toolchain step that the stokecuda build needs
// first (without it, go build fails on cuda.h), the build, and --device cpu.
func TestNoCUDABuildNamesTheRealSteps(t *testing.T) {
	msg := ErrNoCUDA.Error()
	toolchain, build := strings.Index(msg, `eval "$(scripts/cuda-toolchain.sh --env)"`), strings.Index(msg, "go build -tags stokecuda")
	if toolchain < 0 || build < 0 || build < toolchain || !strings.Contains(msg, "--device cpu") {
		t.Errorf("%q: want the toolchain step, then the build, and --device cpu", msg)
	}
}
