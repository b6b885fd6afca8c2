package data

import (
	"image"
	"math/rand/v2"
)

// Sample is one image of the dataset and its class.
type Sample struct {
	Path  string
	Label int
}

// Index lists the samples of one split (train or val) of an ImageFolder.
type Index struct {
	Root    string   // the split's folder, e.g. DIR/train
	Classes []string // sorted class names; Label indexes this
	Samples []Sample // sorted by class, then path
}

// Allocator gives the host memory that batch buffers live in. Buffers are
// allocated once, when a Loader starts, and reused for the whole run.
type Allocator interface {
	// Alloc returns n bytes, aligned to at least 64 bytes.
	Alloc(n int) ([]byte, error)
	// Free releases memory returned by Alloc.
	Free(b []byte) error
	// Name says what kind of memory this is ("pageable", "pinned").
	Name() string
}

// Transform turns one decoded image into a float32 CHW tensor of
// 3 x Size() x Size(), written into dst. It must be safe for concurrent use
// by several goroutines, each with its own rng, and deterministic given rng.
type Transform interface {
	Size() int
	Apply(img image.Image, rng *rand.Rand, dst []float32) error
}
