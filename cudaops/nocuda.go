//go:build !stokecuda

package cudaops

func driverStatus() error {
	return &UnavailableError{Reason: "this binary was built without CUDA; build with `go build -tags stokecuda` (see docs/cuda.md)"}
}
