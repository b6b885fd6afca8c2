//go:build !race

package cpuops

const raceEnabled = false
