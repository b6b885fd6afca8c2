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
		return buf[:0], notRegularFile(unixFileType(uint32(st.Mode))) // Mode is uint16 on darwin
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

// unixFileType is the fs.FileMode type bits of a stat mode's S_IFMT (whose
// numbering is not fs.FileMode's).
func unixFileType(mode uint32) fs.FileMode {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}
