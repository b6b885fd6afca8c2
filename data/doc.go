// Package data reads an ImageFolder dataset, or its tar shards, and turns it
// into batches.
//
// The flow is: Scan builds an Index (paths, labels, classes) once; a Sampler
// gives the order of samples for (seed, epoch); a Loader decodes and
// transforms samples in Workers goroutines (0 = inline in the caller's
// goroutine, as PyTorch does), writes each into its slot of a batch buffer
// drawn from a bounded pool, and hands batches back in sampler order.
//
// Each sample's random numbers come from SampleRNG(seed, epoch, index): the
// RNG belongs to the sample, not to the worker, so an epoch's batches are
// bit-identical whatever the number of workers, also when it changes
// within an epoch (Iter.SetWorkers, which data.workers: auto uses after
// measuring: ChooseWorkers). A bad image is refused or
// skipped on its own bytes: it changes neither how later images decode nor
// their memory budget, so batches do not depend on which worker met it.
//
// Batch buffers come from an Allocator: pageable Go memory by default,
// page-locked memory from the CUDA backend when pin_memory is on. This
// package knows nothing of models or CUDA.
//
// Files, by concern:
//
//	index.go    Scan: the ImageFolder layout, and its errors (ErrLayout, fs.ErrNotExist)
//	shards.go   tar shards in the WebDataset layout: their scan and index files (ErrShard)
//	pack.go     Pack: an ImageFolder written as shards
//	samplereader.go  SampleReader: a sample's bytes, from its file or by pread from its shard
//	decode.go   Decode/Decoder: JPEG and PNG to RGB, size limits, *ImageError
//	cost.go     a decode's memory, estimated from the header (MaxBytes, the budget)
//	turbo.go    libjpeg-turbo through dlopen; a fresh handle after every failure
//	sampler.go  Permutation, SampleRNG, SampleSource (reseeded without allocating)
//	alloc.go    Pageable, Float32s/Int32s views of a buffer
//	loader.go   Loader, Iter, Batch: workers, the buffer pool, reordering
//	autoworkers.go  ChooseWorkers: data.workers auto's rule, from the measured build and step times
//	stages.go   one sample's stages (PlanCrop, ApplyCrop), which benchmarks time one by one
//	synth.go    Generate/EnsureSynthetic: the learnable synthetic dataset
//
// Errors: a bad image is an *ImageError naming the file (SHARD.tar/MEMBER
// in a shard) and wrapping one of ErrEmptyFile, ErrUnsupported, ErrCorrupt,
// ErrTooLarge or ErrUnreadable; a missing dataset wraps fs.ErrNotExist; a
// malformed one wraps ErrLayout; a broken tar shard wraps ErrShard.
package data
