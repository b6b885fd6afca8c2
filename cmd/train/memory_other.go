//go:build !linux

package main

// machineMemory is a stated figure where /proc/meminfo is missing: runs
// estimated to need more than that are refused as not fitting.
func machineMemory() (int64, string) { return fallbackMemory, fallbackSource }
