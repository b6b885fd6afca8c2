package dist

import (
	"os"
	"path/filepath"
	"strings"

	"stoke/internal/libfind"
)

// NCCLCandidates lists where libnccl.so.2 is looked for, in order, as
// cudaops looks for cuBLAS: the dynamic loader's own search
// (LD_LIBRARY_PATH, the ld.so cache) by soname; the CUDA toolkit's and the
// distribution's usual folders; and the nvidia/*/lib folders of Python
// environments, where the pip wheels (nvidia-nccl-cu12, nvidia-nccl-cu13,
// PyTorch's dependencies) put it. library, when not empty, is the only
// place: a file, or a folder holding libnccl.so.2.
func NCCLCandidates(library string) []string {
	if library != "" {
		if st, err := os.Stat(library); err == nil && st.IsDir() {
			return []string{filepath.Join(library, DefaultNCCLLibrary)}
		}
		return []string{library}
	}
	out := []string{DefaultNCCLLibrary}
	for _, d := range append(libfind.ToolkitDirs(), "/usr/local/lib") {
		out = append(out, filepath.Join(d, DefaultNCCLLibrary))
	}
	for _, d := range libfind.WheelDirs("nvidia/nccl/lib", "nvidia/cu1*/lib") {
		out = append(out, filepath.Join(d, DefaultNCCLLibrary))
	}
	return libfind.Dedupe(out)
}

// NoNCCLError says that no usable NCCL was found, and where it was looked
// for.
type NoNCCLError struct {
	Tried []string // each place and why it failed
}

func (e *NoNCCLError) Error() string {
	return "train.dist nccl: no usable NCCL (" + DefaultNCCLLibrary + "); looked in:\n  " + strings.Join(e.Tried, "\n  ") +
		"\ninstall NCCL 2 (NVIDIA's libnccl2 package, or pip install nvidia-nccl-cu12), put its folder on LD_LIBRARY_PATH, or use train.dist mpi (host copies of the gradients summed over MPI)"
}

// DefaultNCCLLibrary is the soname of NCCL 2.
const DefaultNCCLLibrary = "libnccl.so.2"
