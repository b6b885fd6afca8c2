//go:build race

package model

// raceEnabled: the race detector makes sync.Pool (gemm's scratch) drop
// items at random, so allocation counts are not checked under it.
const raceEnabled = true
