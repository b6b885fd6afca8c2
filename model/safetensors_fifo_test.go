//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package model

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadSafetensorsRefusesAFIFO: a FIFO in a tensor file's place is
// refused, not opened (an open waits for a writer that never comes).
func TestReadSafetensorsRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "model.safetensors")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := ReadSafetensors(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("a FIFO: error %v, want it refused as not a regular file", err)
		}
	case <-time.After(time.Minute): // a guard against a hang, not a timing
		t.Fatal("reading a FIFO blocked")
	}
}
