//go:build !unix

package data

import (
	"io"
	"os"
)

// readFile reads the regular file at path into buf (grown if too small).
func readFile(path string, buf []byte, _ *[]byte, maxBytes int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return buf[:0], err
	}
	if !fi.Mode().IsRegular() {
		return buf[:0], notRegularFile(fi.Mode().Type())
	}
	if fi.Size() > maxBytes {
		return buf[:0], fileTooLarge(fi.Size(), maxBytes)
	}
	n := int(fi.Size())
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(f, buf); err != nil {
		return buf[:0], err
	}
	return buf, nil
}
