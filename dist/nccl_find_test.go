package dist

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNCCLCandidates: the loader's search first, then the CUDA and system
// folders and a Python environment's wheel folders (nvidia/nccl/lib);
// a setting is the only place, a folder meaning its libnccl.so.2.
func TestNCCLCandidates(t *testing.T) {
	venv := t.TempDir()
	wheel := filepath.Join(venv, "lib", "python3.12", "site-packages", "nvidia", "nccl", "lib")
	if err := os.MkdirAll(wheel, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VIRTUAL_ENV", venv)
	got := NCCLCandidates("")
	if got[0] != DefaultNCCLLibrary {
		t.Errorf("first candidate %q, want the soname (the loader's own search)", got[0])
	}
	for _, want := range []string{"/usr/local/cuda/lib64/libnccl.so.2", filepath.Join(wheel, DefaultNCCLLibrary)} {
		if !slices.Contains(got, want) {
			t.Errorf("candidates lack %s:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if got := NCCLCandidates(wheel); len(got) != 1 || got[0] != filepath.Join(wheel, DefaultNCCLLibrary) {
		t.Errorf("a folder setting: %v", got)
	}
	if got := NCCLCandidates("/opt/x/libnccl.so.2.21"); len(got) != 1 || got[0] != "/opt/x/libnccl.so.2.21" {
		t.Errorf("a file setting: %v", got)
	}
	msg := (&NoNCCLError{Tried: []string{"a: not there"}}).Error()
	for _, want := range []string{"train.dist nccl", "looked in:\n  a: not there", "use train.dist mpi"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}
