package dist

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// MPI does not check that the ranks of a collective pass buffers of one
// size: with another model on one rank an allreduce writes past the end of
// the smaller buffer (heap corruption, SIGABRT, SIGSEGV in libmpi, naming
// no rank). Check makes that impossible: every collective is preceded by a
// header of a fixed size, in which each rank says what it is about to run;
// where the ranks differ, every rank returns the same error, naming them,
// and the collective is not run.

// Check wraps c so that no collective runs on buffers of different sizes
// across the ranks. Each collective first allreduces a header of
// headerWords floats per rank (the same size on every rank), in which rank
// r fills its own slot with the collective's kind, element count, root and
// sequence number; the sum hands every rank every rank's slot. A
// difference becomes a *MismatchError on every rank, before the collective
// runs. The gradient buckets of a training step (Buckets) agree on their
// whole layout in one header per step instead of one per bucket, and each
// bucket's size is then checked against that layout on its own rank.
//
// A world of one, or a Comm already checked, is returned as it is.
func Check(c Comm) Comm {
	if _, ok := c.(*checked); ok || c.Size() <= 1 {
		return c
	}
	return &checked{Comm: c}
}

// Kinds of collective, as a header names them.
const (
	opAllreduceF32 = 1 + iota
	opAllreduceF64
	opBroadcastF32
	opBroadcastBytes
	opBarrier
	opGroup // a training step's gradient buckets, agreed as one layout
)

// headerWords: a header slot holds 16-bit words, so that every float32 sum
// (one rank's word plus zeros) is exact: kind, the count in 4 words (64
// bits), the root or layout hash in 2, the sequence number's low 16 bits.
const headerWords = 8

type header struct {
	kind  int
	count uint64
	tag   uint32 // the root of a broadcast; the hash of a group's layout
	seq   uint16
}

func (h header) put(slot []float32) {
	w := []uint64{uint64(h.kind), h.count & 0xffff, h.count >> 16 & 0xffff, h.count >> 32 & 0xffff, h.count >> 48,
		uint64(h.tag & 0xffff), uint64(h.tag >> 16), uint64(h.seq)}
	for i, v := range w {
		slot[i] = float32(v)
	}
}

func readHeader(slot []float32) header {
	w := make([]uint64, headerWords)
	for i, v := range slot {
		w[i] = uint64(v)
	}
	return header{kind: int(w[0]), count: w[1] | w[2]<<16 | w[3]<<32 | w[4]<<48, tag: uint32(w[5] | w[6]<<16), seq: uint16(w[7])}
}

func (h header) String() string {
	switch h.kind {
	case opAllreduceF32:
		return fmt.Sprintf("allreduce of %d floats", h.count)
	case opAllreduceF64:
		return fmt.Sprintf("allreduce of %d doubles", h.count)
	case opBroadcastF32:
		return fmt.Sprintf("broadcast of %d floats from rank %d", h.count, h.tag)
	case opBroadcastBytes:
		return fmt.Sprintf("broadcast of %d bytes from rank %d", h.count, h.tag)
	case opBarrier:
		return "barrier"
	case opGroup:
		return fmt.Sprintf("a training step's gradient allreduces, %d floats in all (layout %08x)", h.count, h.tag)
	}
	return fmt.Sprintf("collective of unknown kind %d", h.kind)
}

// MismatchError says that the ranks were about to run different
// collectives, or the same one on buffers of different sizes: a bug in
// the caller (or ranks that run different programs or settings), stopped
// before it could corrupt memory. Every rank returns the same one.
type MismatchError struct {
	Rank  int      // this rank
	Calls []string // what each rank was about to run, by rank
}

func (e *MismatchError) Error() string {
	var diff []string
	for r, c := range e.Calls {
		if r == 0 || c != e.Calls[0] {
			diff = append(diff, fmt.Sprintf("rank %d: %s", r, c))
		}
	}
	return fmt.Sprintf("dist: the ranks are not running the same collective, so it was not run (buffers of different sizes would corrupt memory): %s", strings.Join(diff, "; "))
}

type checked struct {
	Comm
	seq   uint16
	group *group // the gradient step whose layout was agreed, if one is open
}

// group is one training step's bucket allreduces: sizes agreed by one
// header (req, in flight until the first bucket starts), then run in order.
type group struct {
	sizes []int
	next  int
	req   Request
	hdr   []float32
	self  header
}

func (c *checked) newHeader(h header) []float32 {
	c.seq++
	h.seq = c.seq
	buf := make([]float32, headerWords*c.Size())
	h.put(buf[headerWords*c.Rank():])
	return buf
}

// compare reads the summed headers: nil when every rank's equals self.
func (c *checked) compare(buf []float32, self header) error {
	hs := make([]header, c.Size())
	same, seqs := true, false
	for r := range hs {
		hs[r] = readHeader(buf[headerWords*r : headerWords*(r+1)])
		same = same && hs[r] == self
		seqs = seqs || hs[r].seq != hs[0].seq
	}
	if same {
		return nil
	}
	calls := make([]string, len(hs))
	for r, h := range hs {
		calls[r] = h.String()
		if seqs { // the ranks have run different numbers of collectives
			calls[r] += fmt.Sprintf(" (its collective #%d)", h.seq)
		}
	}
	return &MismatchError{Rank: c.Rank(), Calls: calls}
}

// agree runs the header of the collective h and returns its verdict.
func (c *checked) agree(h header) error {
	c.group = nil
	buf := c.newHeader(h)
	h.seq = c.seq
	if err := c.Comm.AllreduceSum(buf); err != nil {
		return err
	}
	return c.compare(buf, h)
}

// startGroup agrees on the layout of a step's bucket allreduces with one
// header, started now and checked when the first bucket starts.
func (c *checked) startGroup(sizes []int) error {
	h := header{kind: opGroup, tag: layoutHash(sizes)}
	for _, n := range sizes {
		h.count += uint64(n)
	}
	buf := c.newHeader(h)
	h.seq = c.seq
	req, err := c.Comm.StartAllreduceSum(buf)
	if err != nil {
		c.group = nil
		return err
	}
	c.group = &group{sizes: sizes, req: req, hdr: buf, self: h}
	return nil
}

func layoutHash(sizes []int) uint32 {
	h := fnv.New32a()
	for _, n := range sizes {
		fmt.Fprintf(h, "%d,", n)
	}
	return h.Sum32()
}

func (c *checked) StartAllreduceSum(buf []float32) (Request, error) {
	g := c.group
	if g == nil {
		if err := c.agree(header{kind: opAllreduceF32, count: uint64(len(buf))}); err != nil {
			return nil, err
		}
		return c.Comm.StartAllreduceSum(buf)
	}
	if g.req != nil {
		err := g.req.Wait()
		g.req = nil
		if err == nil {
			err = c.compare(g.hdr, g.self)
		}
		if err != nil {
			c.group = nil
			return nil, err
		}
	}
	if g.next >= len(g.sizes) || len(buf) != g.sizes[g.next] {
		c.group = nil
		want := "none: the layout has " + fmt.Sprint(len(g.sizes)) + " buckets"
		if g.next < len(g.sizes) {
			want = fmt.Sprint(g.sizes[g.next])
		}
		return nil, fmt.Errorf("dist: rank %d: gradient bucket %d is an allreduce of %d floats, but the step's agreed layout says %s (a bug; not run)", c.Rank(), g.next, len(buf), want)
	}
	if g.next++; g.next == len(g.sizes) {
		c.group = nil
	}
	return c.Comm.StartAllreduceSum(buf)
}

func (c *checked) AllreduceSum(buf []float32) error {
	c.group = nil // a blocking allreduce is never one of a step's buckets
	return wait(c.StartAllreduceSum(buf))
}

func (c *checked) AllreduceSumFloat64(buf []float64) error {
	if err := c.agree(header{kind: opAllreduceF64, count: uint64(len(buf))}); err != nil {
		return err
	}
	return c.Comm.AllreduceSumFloat64(buf)
}

func (c *checked) Broadcast(buf []float32, root int) error {
	if err := c.agree(header{kind: opBroadcastF32, count: uint64(len(buf)), tag: uint32(root)}); err != nil {
		return err
	}
	return c.Comm.Broadcast(buf, root)
}

func (c *checked) BroadcastBytes(buf []byte, root int) error {
	if err := c.agree(header{kind: opBroadcastBytes, count: uint64(len(buf)), tag: uint32(root)}); err != nil {
		return err
	}
	return c.Comm.BroadcastBytes(buf, root)
}

func (c *checked) Barrier() error {
	if err := c.agree(header{kind: opBarrier}); err != nil {
		return err
	}
	return c.Comm.Barrier()
}

// wait is Request.Wait after a start that may have failed.
func wait(r Request, err error) error {
	if err != nil {
		return err
	}
	return r.Wait()
}
