//go:build unix && !linux

package data

import "syscall"

// openRead opens path read-only.
func openRead(path string, _ *[]byte) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0) // a FIFO must not block the open
		if err != syscall.EINTR {
			return fd, err
		}
	}
}
