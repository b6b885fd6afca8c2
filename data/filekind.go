package data

import (
	"fmt"
	"io/fs"
)

// notRegularFile is the error for a path that opened but is no regular
// file: it says what the path is (a folder, a FIFO, ...), which the mode
// bits of fs.FileMode.String do not for a folder or FIFO of syscall's
// numbering.
func notRegularFile(m fs.FileMode) error {
	what := "something other than a file"
	switch {
	case m&fs.ModeDir != 0:
		what = "a folder"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	case m&fs.ModeSymlink != 0:
		what = "a symbolic link"
	}
	return fmt.Errorf("not a regular file: it is %s; an image must be a JPEG or PNG file", what)
}
