//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package trainer

import (
	"errors"
	"os"
	"syscall"
)

var errNoLocking = errors.New("no file locking")

// lockExclusive takes an exclusive flock on f without waiting: held is
// false when another open file description holds it. The kernel drops the
// lock when the process ends, however it ends.
func lockExclusive(f *os.File) (held bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if err == syscall.EWOULDBLOCK {
		return false, nil
	}
	return err == nil, err
}

const lockSupported = true
