//go:build !(cgo && unix)

package dist

import "errors"

// DefaultMPILibrary is the Open MPI library a cgo build loads.
const DefaultMPILibrary = "libmpi.so.40"

// OpenMPI needs cgo (the library is loaded with dlopen).
func OpenMPI(Options) (Comm, error) {
	return nil, errors.New("dist: MPI is not available in this binary: it was built without cgo (CGO_ENABLED=0), which loading libmpi needs; rebuild with cgo, or set train.dist none")
}
