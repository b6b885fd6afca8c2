package data

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// Domain tags keep the streams of different uses of one seed apart.
const (
	tagShuffle = 0x53485546464c4531 // "SHUFFLE1"
	tagSample  = 0x53414d504c453031 // "SAMPLE01"
	tagSynth   = 0x53594e5448303031 // "SYNTH001"
)

// splitmix64 is the finaliser of SplitMix64 (Steele, Lea, Flood 2014): a
// bijection on uint64 whose output bits each depend on every input bit.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// mixSeed folds a tag and values into the two words of a PCG seed. Each
// value passes through splitmix64 after being xored in, so neighbouring
// values (epoch 3 and 4, sample 7 and 8) give unrelated seeds.
func mixSeed(tag uint64, vals ...uint64) (hi, lo uint64) {
	h := splitmix64(tag)
	for _, v := range vals {
		h = splitmix64(h ^ v)
	}
	return h, splitmix64(h ^ 0x6a09e667f3bcc908)
}

// Permutation returns the order in which epoch visits the n samples: the
// identity when shuffle is false, otherwise a permutation drawn from
// (seed, epoch) alone, the same on every machine and Go version (the
// Fisher-Yates shuffle and its bounded draws are written out here rather
// than borrowed from math/rand, whose algorithms may change).
func Permutation(n int, seed uint64, epoch int, shuffle bool) []int {
	return permutation(make([]int, n), seed, epoch, shuffle)
}

// permutation is Permutation writing into p, which it returns.
func permutation(p []int, seed uint64, epoch int, shuffle bool) []int {
	for i := range p {
		p[i] = i
	}
	if !shuffle {
		return p
	}
	pcg := rand.NewPCG(mixSeed(tagShuffle, seed, uint64(epoch)))
	for i := len(p) - 1; i > 0; i-- {
		j := int(boundedUint64(pcg, uint64(i+1)))
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// boundedUint64 is a uniform draw in [0, n), n > 0, by Lemire's
// multiply-and-reject method ("Fast random integer generation in an
// interval", 2019).
func boundedUint64(src *rand.PCG, n uint64) uint64 {
	for {
		hi, lo := bits.Mul64(src.Uint64(), n)
		if lo >= n || lo >= -n%n {
			return hi
		}
	}
}

// SampleRNG returns the random source of sample index (its position in the
// Index, not in the batch) in epoch: a PCG seeded from a mix of all three,
// so the same sample in the same epoch draws the same augmentation whatever
// goroutine handles it, and neighbouring samples or epochs draw unrelated
// ones.
func SampleRNG(seed uint64, epoch, index int) *rand.Rand {
	return rand.New(rand.NewPCG(mixSeed(tagSample, seed, uint64(epoch), uint64(index))))
}

// SampleSource is a reusable SampleRNG: For reseeds the same PCG instead of
// allocating a new one, for the loader's per-sample hot path. Not safe for
// concurrent use.
type SampleSource struct {
	pcg rand.PCG
	rng *rand.Rand
}

// NewSampleSource returns a SampleSource; call For before drawing from it.
func NewSampleSource() *SampleSource {
	s := &SampleSource{}
	s.rng = rand.New(&s.pcg)
	return s
}

// For reseeds s for (seed, epoch, index) and returns its Rand, which then
// yields exactly the stream SampleRNG(seed, epoch, index) would.
func (s *SampleSource) For(seed uint64, epoch, index int) *rand.Rand {
	s.pcg.Seed(mixSeed(tagSample, seed, uint64(epoch), uint64(index)))
	return s.rng
}

// Split is one rank's part of a data-parallel run of Ranks processes: every
// rank draws the same Permutation; global batch j is the B·Ranks samples
// perm[j·B·Ranks : (j+1)·B·Ranks] (B the per-rank batch size), of which
// rank r trains [r·B, (r+1)·B). N ranks × batch B therefore see exactly the
// batches of 1 rank × batch N·B, and the last short global batch and
// drop_last are those of the one-process run: a rank whose slice of the
// short batch is empty gets an empty batch (N = 0), which it must still
// step with (its gradient is zero), rather than the repeated samples of
// PyTorch's DistributedSampler, which pads and strides indices[rank::world].
// The zero Split is the one-process run.
type Split struct {
	Rank, Ranks int
}

func (s Split) ranks() int { return max(s.Ranks, 1) }

// Check reports a Split that names no rank of its world.
func (s Split) Check() error {
	if s.Ranks < 0 || s.Rank < 0 || s.Rank >= s.ranks() {
		return fmt.Errorf("data: Split is rank %d of %d ranks", s.Rank, s.Ranks)
	}
	return nil
}

// NumBatches is the number of global batches of an epoch over n samples,
// batch samples per rank: the same on every rank.
func (s Split) NumBatches(n, batch int, dropLast bool) int {
	g := batch * s.ranks()
	nb := n / g
	if !dropLast && n%g != 0 {
		nb++
	}
	return nb
}

// Range is the positions [lo, hi) in the epoch's permutation of n samples
// that this rank trains in global batch j; lo == hi when its slice of a
// short last batch is empty.
func (s Split) Range(j, batch, n int) (lo, hi int) {
	g := batch * s.ranks()
	end := min((j+1)*g, n)
	lo = min(j*g+s.Rank*batch, end)
	return lo, min(lo+batch, end)
}
