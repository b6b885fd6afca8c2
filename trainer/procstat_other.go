//go:build !linux

package trainer

// machineBusy is -1 (not known) where there is no /proc/stat: auto then
// counts no other processes.
func machineBusy() float64 { return -1 }
