//go:build unix

package data

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFIFOIsRefusedNotWaitedOn: a named pipe where an image should be (say,
// swapped in after the scan) must not block the loader on open.
func TestFIFOIsRefusedNotWaitedOn(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pipe.jpg")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Decode(p, 0)
		done <- err
	}()
	select {
	case err := <-done:
		var ie *ImageError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "pipe.jpg") {
			t.Fatalf("error %v, want an *ImageError naming pipe.jpg", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Decode blocked on a FIFO")
	}
}
