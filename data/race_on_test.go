//go:build race

package data

// raceEnabled: the race detector's shadow memory grows the heap several
// times over, so memory figures are measured without it.
const raceEnabled = true
