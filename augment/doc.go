// Package augment holds the image transforms of the training and evaluation
// pipelines: RandomResizedCrop, horizontal flip, colour jitter with
// torchvision's meaning, normalize, and resize + centre crop for evaluation.
//
// Every transform is deterministic given the *rand.Rand it is handed, safe
// for concurrent use, and writes straight into the caller's float32 CHW slot.
// It knows nothing of files or batches.
package augment
