package trainer

import (
	"bytes"

	"stoke/config"
	"stoke/model"
)

// cudaUsable reports whether this build can open a CUDA device here.
func cudaUsable() bool {
	if newCUDADevice == nil {
		return false
	}
	d, err := newCUDADevice(model.Spec{InputSize: 8, Classes: 2, Conv: []model.ConvSpec{{Channels: 1, Kernel: 1}}},
		model.Options{Batch: 1}, config.Default(), new(bytes.Buffer))
	if err != nil {
		return false
	}
	d.Backend.Close()
	if d.Close != nil {
		d.Close()
	}
	return true
}
