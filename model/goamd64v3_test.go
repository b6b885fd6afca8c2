//go:build amd64.v3

package model_test

// fusedBuild: GOAMD64=v3 or above, where the compiler may fuse a multiply
// and an add into one FMA (the Go spec allows it; v1 has no FMA to fuse to).
const fusedBuild = true
