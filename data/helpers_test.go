package data

import "unsafe"

func unsafePointer(p *byte) unsafe.Pointer { return unsafe.Pointer(p) }

// childMain, when set (memory_test.go, on Linux), runs the test binary as a
// child process of a test and reports whether it did.
var childMain func() bool
