// Package augment holds the image transforms of the training and evaluation
// pipelines: RandomResizedCrop, horizontal flip, colour jitter with
// torchvision's meaning, normalize, and resize + centre crop for evaluation.
//
// Every transform is deterministic given the *rand.Rand it is handed, safe
// for concurrent use, and writes straight into the caller's float32 (or
// uint8) CHW slot. It knows nothing of files or batches.
//
// The pixel loops run in two passes over the image (three when contrast is
// on), with the colour ops, normalize and quantize fused into the last: a
// separable antialiased resize with precomputed taps reading the decoder's
// bytes in place, a row at a time. They are AVX2 assembly where the CPU has
// it and pure Go elsewhere (kernels.go); both give the same bits.
package augment
