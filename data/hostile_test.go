//go:build unix

package data

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
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

// TestHugeFileIsRefusedUnread: an 8 GB file named .jpg (sparse: it takes no
// disk) is refused from its size, before a byte of it is read.
func TestHugeFileIsRefusedUnread(t *testing.T) {
	p := filepath.Join(t.TempDir(), "huge.jpg")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 30); err != nil {
		f.Close()
		t.Skip("no sparse files here:", err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Decode(p, 0)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "huge.jpg") {
		t.Fatalf("error %v, want ErrTooLarge naming huge.jpg", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("%d bytes allocated to refuse it", got)
	}
}
