//go:build !unix

package data

import "os"

// processAlive reports whether a process with this ID exists: on Windows
// FindProcess opens it, and fails when there is none.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
