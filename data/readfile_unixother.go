//go:build unix && !linux

package data

import "syscall"

// openRead opens path read-only.
func openRead(path string, _ *[]byte) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}
