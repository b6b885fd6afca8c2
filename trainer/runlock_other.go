//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package trainer

import (
	"errors"
	"os"
	"runtime"
)

// errNoLocking: on this system (Windows, among others) run folders are not
// locked; the run says so once at its start, and otherwise runs as usual.
var errNoLocking = errors.New("no flock on " + runtime.GOOS)

func lockExclusive(*os.File) (bool, error) { return true, errNoLocking }

const lockSupported = false
