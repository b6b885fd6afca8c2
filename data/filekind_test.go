//go:build unix

package data

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestNotARegularFileSaysWhatItIs: a folder or a FIFO where an image was
// expected is refused naming what it is, not with the mode bits
// "(----------)" that syscall's S_IFMT numbering gave through fs.FileMode.
func TestNotARegularFileSaysWhatItIs(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.jpg")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tc := range []struct{ path, want string }{
		{dir, "it is a folder"},
		{fifo, "it is a named pipe (FIFO)"},
	} {
		var d Decoder
		_, err := d.ReadFile(tc.path)
		var ie *ImageError
		if !errors.As(err, &ie) || !errors.Is(err, ErrUnreadable) || ie.Path != tc.path {
			t.Fatalf("%s: %v, want an *ImageError for it wrapping ErrUnreadable", tc.path, err)
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "---") {
			t.Errorf("%s: %q, want %q", tc.path, msg, tc.want)
		}
	}
}
