// Package libfind lists the folders where stoke looks for the NVIDIA
// libraries it loads at run time (cuBLAS in cudaops, NCCL in dist) after
// the dynamic loader's own search: the CUDA toolkit's usual folders, and
// the nvidia/*/lib folders of Python environments, where PyTorch's pip
// wheels put them.
package libfind

import (
	"os"
	"path/filepath"
	"sort"
)

// ToolkitDirs are the CUDA toolkit's and the distribution's library
// folders, in order (a new slice each call).
func ToolkitDirs() []string {
	return []string{"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/lib/x86_64-linux-gnu"}
}

// WheelDirs lists, in order, the folders matching each of subs (globs
// such as "nvidia/cublas/lib") below the site-packages and dist-packages
// of the Python environments: $VIRTUAL_ENV, $CONDA_PREFIX, /usr/local,
// /usr, /opt/conda and ~/.local; each glob's matches sorted.
func WheelDirs(subs ...string) []string {
	var envs []string
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := os.Getenv(v); p != "" {
			envs = append(envs, p)
		}
	}
	home, _ := os.UserHomeDir()
	envs = append(envs, "/usr/local", "/usr", "/opt/conda", filepath.Join(home, ".local"))
	var out []string
	for _, env := range envs {
		for _, site := range []string{"lib/python3*/site-packages", "lib/python3*/dist-packages", "lib/python3/dist-packages"} {
			for _, sub := range subs {
				dirs, _ := filepath.Glob(filepath.Join(env, site, sub))
				sort.Strings(dirs)
				out = append(out, dirs...)
			}
		}
	}
	return out
}

// Dedupe is s with each string's later repeats left out.
func Dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
