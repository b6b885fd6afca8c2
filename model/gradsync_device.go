package model

import G "gorgonia.org/gorgonia"

// DeviceGradSync is a GradSync that takes the gradients where the engine
// keeps them (device memory on a GPU) instead of host copies: NCCL sums
// them on the device (cudaops.NCCLSync). The model hands it each gradient
// value with ReadyValue, in Ready's order, from the goroutine that runs the
// graph, right after the op that wrote it has been queued; Ready is not
// called. Wait must leave the synchronized gradient in each value before
// the update reads it, in the engine's order of work (on a GPU: the
// compute stream waits for the sums, the host need not), and report any
// failure it knows of; a failure it learns of later (an asynchronous one)
// it reports at a later Begin's Wait.
//
// Unlike the host path, the model does not check the synchronized
// gradients for non-finite values (that would read them on the host every
// step): a rank whose own loss is not finite still stops with
// ErrNonFiniteLoss, which ends the job on every rank.
type DeviceGradSync interface {
	GradSync
	// ReadyValue hands over trainable parameter i's gradient value. With
	// n = 0 at Begin its contents are not read: the sync writes zeros.
	ReadyValue(i int, grad G.Value) error
}
