package data

import (
	"image"
	"math/rand/v2"
)

// Sample is one image of the dataset and its class.
type Sample struct {
	Path  string
	Label int
	// Member, in a shard set, locates the image in Index.Shards: Path is
	// then the shard's path, a slash and the member's name, which names
	// the image in errors and skip lists. nil in an ImageFolder.
	Member *Member
}

// Index lists the samples of one split (train or val) of an ImageFolder.
type Index struct {
	Root    string   // the split's folder, e.g. DIR/train
	Classes []string // sorted class names; Label indexes this
	Samples []Sample // sorted by class, then path (shards: in shard order)
	Shards  []Shard  // the split's tar shards; nil for an ImageFolder
	// SkippedMembers describes each broken shard member left out by a
	// scan with ScanOptions.SkipBadShards (shard, member and what is wrong).
	SkippedMembers []string
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

// A RegionTransform is a Transform split around the decode, so that the
// loader can decode a JPEG at reduced size: Region draws, before any pixel
// is decoded, the part of a w x h image the transform reads (src, in
// full-size pixels) and the size it resizes that part to (outW x outH);
// the loader then picks the largest DCT scale 1/k (k = 8, 4, 2) that still
// leaves src at least outW x outH pixels, decodes at that scale, and
// ApplyRegion finishes with the same rng. ApplyRegion writes every value of
// exactly one of f32 (normalized float32) or u8 (uint8, normalized later,
// on the device or by augment.NormalizeU8). augment's Train and Eval are
// RegionTransforms.
type RegionTransform interface {
	Transform
	Region(w, h int, rng *rand.Rand) (src image.Rectangle, outW, outH int)
	ApplyRegion(img image.Image, scale int, src image.Rectangle, rng *rand.Rand, f32 []float32, u8 []uint8) error
}

// DCTScale is the largest scale divisor k in {8, 4, 2, 1} such that src
// decoded at 1/k still has at least outW x outH pixels: FFCV's and PIL's
// draft-mode rule, applied to the crop rather than the whole image.
func DCTScale(src image.Rectangle, outW, outH int) int {
	for _, k := range [...]int{8, 4, 2} {
		if src.Dx() >= k*outW && src.Dy() >= k*outH {
			return k
		}
	}
	return 1
}
