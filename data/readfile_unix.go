//go:build unix

package data

import (
	"fmt"
	"io"
	"io/fs"
	"syscall"
)

// readFile reads the regular file at path into buf (grown if too small)
// with four system calls and no allocation: open, fstat, read, close. os.Open
// would allocate an *os.File and try to register the descriptor with the
// network poller (an extra epoll_ctl that fails for regular files) on
// every image; the path's C copy lives in *pathBuf.
func readFile(path string, buf []byte, pathBuf *[]byte, maxBytes int64) ([]byte, error) {
	fd, err := openRead(path, pathBuf)
	if err != nil {
		return buf[:0], &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return buf[:0], &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return buf[:0], fmt.Errorf("not a regular file (%s)", fs.FileMode(st.Mode&syscall.S_IFMT).Type())
	}
	if st.Size > maxBytes {
		return buf[:0], fileTooLarge(st.Size, maxBytes)
	}
	n := int(st.Size)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	for off := 0; off < n; {
		m, err := syscall.Read(fd, buf[off:])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return buf[:0], &fs.PathError{Op: "read", Path: path, Err: err}
		case m == 0:
			return buf[:0], fmt.Errorf("read %s: %w (file shrank while read)", path, io.ErrUnexpectedEOF)
		}
		off += m
	}
	return buf, nil
}
