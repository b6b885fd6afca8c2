//go:build linux

package data

import (
	"syscall"
	"unsafe"
)

// openRead opens path read-only through a NUL-terminated copy in *scratch,
// reused between calls: syscall.Open would allocate that copy per image.
func openRead(path string, scratch *[]byte) (int, error) {
	b := append((*scratch)[:0], path...)
	b = append(b, 0)
	*scratch = b
	for {
		fd, _, errno := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&b[0])),
			uintptr(syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK), 0, 0, 0) // O_NONBLOCK: a FIFO must not block the open; fstat then refuses it
		switch errno {
		case 0:
			return int(fd), nil
		case syscall.EINTR:
			continue
		}
		return -1, errno
	}
}

var atFDCWD = -100 // AT_FDCWD (a variable: the constant does not convert to uintptr)
