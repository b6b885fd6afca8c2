//go:build race

package main

// raceEnabled: the race detector's own bookkeeping grows with every
// goroutine a run starts, so memory is measured without it.
const raceEnabled = true
