//go:build unix

package trainer

import (
	"syscall"
	"testing"
)

// mkfifo makes a named pipe at path and returns path ("" where there are none).
func mkfifo(t *testing.T, path string) string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
