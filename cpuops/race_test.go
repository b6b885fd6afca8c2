//go:build race

package cpuops

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are not checked under it.
const raceEnabled = true
