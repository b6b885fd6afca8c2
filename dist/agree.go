package dist

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// Disagreement is what Agree found: the ranks whose text differs from
// rank 0's, and the texts, to be compared line by line by the caller.
type Disagreement struct {
	Ranks []int          // the ranks whose text differs from rank 0's, in order
	Rank0 []byte         // rank 0's text
	Texts map[int][]byte // the text of each of the first MaxDetailed of Ranks
}

// MaxDetailed is how many disagreeing ranks Agree sends the text of; the
// others are named only.
const MaxDetailed = 4

// Agree checks, before any work depends on it, that every rank holds the
// same text (a run's resolved settings, its class and file lists). Every
// rank sends a SHA-256 of its text in one allreduce of a fixed size (the
// digest in 16-bit words, each rank in its own slot, so the float32 sums
// are exact); only where digests differ are texts sent, rank 0's and the
// first MaxDetailed others', each as a broadcast of its length and then of
// its bytes. Every rank returns the same result: nil when all agree. Every
// rank must call Agree at the same point.
func Agree(c Comm, text []byte) (*Disagreement, error) {
	if c.Size() <= 1 {
		return nil, nil
	}
	const words = sha256.Size / 2
	sum := sha256.Sum256(text)
	buf := make([]float32, words*c.Size())
	for i := range words {
		buf[words*c.Rank()+i] = float32(binary.LittleEndian.Uint16(sum[2*i:]))
	}
	if err := c.AllreduceSum(buf); err != nil {
		return nil, fmt.Errorf("exchanging the ranks' digests: %w", err)
	}
	d := &Disagreement{Texts: map[int][]byte{}}
	for r := 1; r < c.Size(); r++ {
		for i := range words {
			if buf[words*r+i] != buf[i] {
				d.Ranks = append(d.Ranks, r)
				break
			}
		}
	}
	if len(d.Ranks) == 0 {
		return nil, nil
	}
	var err error
	if d.Rank0, err = share(c, 0, text); err != nil {
		return nil, err
	}
	for _, r := range d.Ranks[:min(len(d.Ranks), MaxDetailed)] {
		if d.Texts[r], err = share(c, r, text); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// share broadcasts root's text: its length, then its bytes.
func share(c Comm, root int, text []byte) ([]byte, error) {
	n := make([]byte, 8)
	if c.Rank() == root {
		binary.LittleEndian.PutUint64(n, uint64(len(text)))
	}
	if err := c.BroadcastBytes(n, root); err != nil {
		return nil, fmt.Errorf("receiving the length of rank %d's settings: %w", root, err)
	}
	l := binary.LittleEndian.Uint64(n)
	if l > 1<<30 {
		return nil, fmt.Errorf("rank %d's settings are said to be %d bytes long", root, l)
	}
	b := make([]byte, l)
	if c.Rank() == root {
		copy(b, text)
	}
	if err := c.BroadcastBytes(b, root); err != nil {
		return nil, fmt.Errorf("receiving rank %d's settings: %w", root, err)
	}
	return b, nil
}
