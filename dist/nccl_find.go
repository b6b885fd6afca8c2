package dist

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
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
	for _, d := range []string{"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/lib/x86_64-linux-gnu", "/usr/local/lib"} {
		out = append(out, filepath.Join(d, DefaultNCCLLibrary))
	}
	var envs []string
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := os.Getenv(v); p != "" {
			envs = append(envs, p)
		}
	}
	home, _ := os.UserHomeDir()
	envs = append(envs, "/usr/local", "/usr", "/opt/conda", filepath.Join(home, ".local"))
	for _, env := range envs {
		for _, site := range []string{"lib/python3*/site-packages", "lib/python3*/dist-packages", "lib/python3/dist-packages"} {
			for _, sub := range []string{"nvidia/nccl/lib", "nvidia/cu1*/lib"} {
				dirs, _ := filepath.Glob(filepath.Join(env, site, sub))
				sort.Strings(dirs)
				for _, d := range dirs {
					out = append(out, filepath.Join(d, DefaultNCCLLibrary))
				}
			}
		}
	}
	seen := map[string]bool{}
	var uniq []string
	for _, c := range out {
		if !seen[c] {
			seen[c] = true
			uniq = append(uniq, c)
		}
	}
	return uniq
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
