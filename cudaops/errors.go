//go:build stokecuda

package cudaops

// UnavailableError says why the GPU cannot be used: no driver, NVIDIA's
// link stub in place of the driver, no device, or one too old. The trainer
// shows it as is; the process then exits non-zero. (A build without the tag
// has no cudaops to ask: the trainer says so itself, trainer.ErrNoCUDA.)
type UnavailableError struct {
	Code   int    // the CUDA error cuInit returned, or 0
	Reason string // what is wrong and what to do, for a person
}

func (e *UnavailableError) Error() string { return "cuda unavailable: " + e.Reason }

// Check reports, without opening a device, whether this binary can use
// CUDA here: the driver loaded and initialised (not NVIDIA's link stub), a
// device present. It is cheap enough to call before any work.
func Check() error { return driverStatus() }
