//go:build !stokecuda

package cudaops

// Built reports whether this binary was built with CUDA support (-tags stokecuda).
const Built = false

func driverStatus() error {
	return &UnavailableError{Reason: "this binary was built without CUDA; build with `go build -tags stokecuda` (see docs/cuda.md)"}
}
