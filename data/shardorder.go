package data

import "math/rand/v2"

// Domain tags of the sequential order's two streams (sampler.go's others).
const (
	tagShardOrder = 0x53484152444f5231 // "SHARDOR1"
	tagBuffer     = 0x5348554642554631 // "SHUFBUF1"
)

// ShardOrder is the order in which epoch visits the samples of a shard
// set in sequential mode (LoaderConfig.ShuffleBuffer), as WebDataset
// shuffles: the shards in an order drawn from (seed, epoch), each read
// front to back, through a buffer of buffer samples from which each next
// sample is drawn at random and replaced by the next one read. Reads then
// move forward through one shard at a time, never more than buffer
// samples behind. It is a permutation computed up front from (seed,
// epoch) alone, so batches are the same for any worker count or number of
// ranks; but it is not the global permutation: a sample's neighbours in a
// shard stay near it in the epoch. The identity when shuffle is false.
func ShardOrder(ix *Index, seed uint64, epoch int, shuffle bool, buffer int) []int {
	return shardOrder(make([]int, len(ix.Samples)), ix, seed, epoch, shuffle, buffer)
}

// shardOrder is ShardOrder writing into p, which it returns.
func shardOrder(p []int, ix *Index, seed uint64, epoch int, shuffle bool, buffer int) []int {
	if !shuffle {
		return permutation(p, seed, epoch, false)
	}
	first := make([]int, len(ix.Shards)+1) // shard k's samples are [first[k], first[k+1])
	for i, s := range ix.Samples {
		first[s.Member.Shard+1] = i + 1
	}
	for k := 1; k < len(first); k++ {
		first[k] = max(first[k], first[k-1]) // a shard without samples
	}
	shards := permutation(make([]int, len(ix.Shards)), 0, 0, false)
	pcg := rand.NewPCG(mixSeed(tagShardOrder, seed, uint64(epoch)))
	for i := len(shards) - 1; i > 0; i-- {
		j := int(boundedUint64(pcg, uint64(i+1)))
		shards[i], shards[j] = shards[j], shards[i]
	}
	draw := rand.NewPCG(mixSeed(tagBuffer, seed, uint64(epoch)))
	buf := make([]int, 0, max(buffer, 1))
	out := p[:0]
	for _, k := range shards {
		for i := first[k]; i < first[k+1]; i++ {
			if len(buf) < cap(buf) {
				buf = append(buf, i)
				continue
			}
			j := int(boundedUint64(draw, uint64(len(buf))))
			out = append(out, buf[j])
			buf[j] = i
		}
	}
	for len(buf) > 0 { // the stream is read: empty the buffer at random
		j := int(boundedUint64(draw, uint64(len(buf))))
		out = append(out, buf[j])
		buf[j] = buf[len(buf)-1]
		buf = buf[:len(buf)-1]
	}
	return out
}
