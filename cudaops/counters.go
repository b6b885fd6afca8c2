//go:build stokecuda

package cudaops

/*
#include "counters.h"
*/
import "C"

// DriverCounters are driver calls counted since the process started
// (counters.c wraps them at the jump table, so every caller is counted, on
// a real GPU as under the stand-in): kernel launches, host waits for the
// device (stream, event and context synchronizations, and synchronous
// copies), allocations and frees of device and pinned memory, and bytes
// copied host to device and device to host. A cuGraphLaunch counts as one
// launch.
type DriverCounters struct {
	Launches, HostSyncs, Allocs, Frees, H2DBytes, D2HBytes uint64
}

// ReadDriverCounters returns the counts so far.
func ReadDriverCounters() DriverCounters {
	var v [6]C.ulonglong
	C.stoke_counters_read(&v[0])
	return DriverCounters{uint64(v[0]), uint64(v[1]), uint64(v[2]), uint64(v[3]), uint64(v[4]), uint64(v[5])}
}

// Sub is c minus an earlier reading.
func (c DriverCounters) Sub(before DriverCounters) DriverCounters {
	return DriverCounters{c.Launches - before.Launches, c.HostSyncs - before.HostSyncs, c.Allocs - before.Allocs,
		c.Frees - before.Frees, c.H2DBytes - before.H2DBytes, c.D2HBytes - before.D2HBytes}
}
