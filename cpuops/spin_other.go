//go:build !amd64

package cpuops

// spinPause is a spin-wait hint; none off amd64.
func spinPause() {}
