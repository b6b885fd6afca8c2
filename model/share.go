package model

import (
	"slices"
	"unsafe"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Activation gradients share memory by liveness (the CPU engine's
// ResNets). Each op owns its output value (ops.go), so a backward pass
// held every layer's input gradient at once: for resnet50 at 224 px,
// batch 4, about 400 MB that PyTorch, freeing each gradient once it is
// consumed, never holds together. Here the ops whose value is an
// activation gradient written by their own do alone (a conv's, a
// BatchNorm's and a max-pool's input gradient: kernelOp.share) get
// buffers that several of them use in turn, one after another's last
// reader has run.
//
// The order is the training machine's own: a dry run of it in which no op
// of ours computes, each only recording itself and the values it is given
// (opTrace). A value's life runs from its op to the last op of ours that
// reads it; two values share a buffer only when one's life ends before
// the other's begins. A value read by one of gorgonia's own ops (the Add
// that sums a fan-out's gradients, which may also write into its first
// input) keeps a buffer of its own, as does one the dry run did not see
// written once and read.

// noSharing builds models whose activation gradients keep a buffer each
// (tests compare the two).
var noSharing bool

// opTrace is the dry run's record: the ops of ours in the order the
// machine ran them, with the values each was given.
type opTrace struct {
	ops []*kernelOp
	in  [][]G.Value
}

// dataOf is the first float of a value's memory (nil for any other
// value): values over the same memory are one.
func dataOf(v G.Value) *float32 {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil
	}
	f, ok := d.Data().([]float32)
	if !ok || len(f) == 0 {
		return nil
	}
	return unsafe.SliceData(f)
}

func (t *opTrace) record(op *kernelOp, vals []G.Value) {
	t.ops = append(t.ops, op)
	t.in = append(t.in, slices.Clone(vals))
}

// shareGradients gives s's sharing ops buffers by liveness, on the CPU
// engine (a device engine's values are its own memory, left as they are).
func (m *Model) shareGradients(s *opSet) error {
	if _, ok := m.eng.Values.(cpuEngine); !ok || noSharing {
		return nil
	}
	type life struct {
		op         *kernelOp
		start, end int
		size       int
	}
	lives := map[*float32]*life{}
	for _, op := range s.all {
		if p := dataOf(op.out); p != nil && op.share {
			lives[p] = &life{op: op, start: -1, end: -1, size: op.shape.TotalSize()}
		}
	}
	if len(lives) == 0 {
		return nil
	}
	tr := &opTrace{}
	s.trace = tr
	err := run(m.train)
	s.trace = nil
	if err != nil {
		return err
	}
	// Values gorgonia's own ops read, or wrote into (an Add's output goes
	// into the value its register last held, or into its first input),
	// keep their buffers: the dry run bound each node to its value.
	for _, n := range m.g.AllNodes() {
		if _, ours := n.Op().(*kernelOp); ours || n.Op() == nil {
			continue
		}
		delete(lives, dataOf(n.Value()))
		for it := m.g.From(n.ID()); it != nil && it.Next(); {
			if c, ok := it.Node().(*G.Node); ok {
				delete(lives, dataOf(c.Value()))
			}
		}
	}
	writes := map[*kernelOp]int{}
	for t, op := range tr.ops {
		writes[op]++
		if l := lives[dataOf(op.out)]; l != nil && l.op == op {
			l.start = t
		}
		for _, v := range tr.in[t] {
			if l := lives[dataOf(v)]; l != nil {
				l.end = max(l.end, t)
			}
		}
	}
	var order []*life
	for _, l := range lives {
		if writes[l.op] == 1 && l.start >= 0 && l.end > l.start {
			order = append(order, l)
		}
	}
	slices.SortFunc(order, func(a, b *life) int { return a.start - b.start })
	// Greedy by start: the smallest free buffer that holds the value, else
	// the largest free one grown to it, else a new one.
	type buffer struct {
		size, freeAt int
		lives        []*life
	}
	var bufs []*buffer
	for _, l := range order {
		var fit, big *buffer
		for _, b := range bufs {
			if b.freeAt >= l.start {
				continue
			}
			if b.size >= l.size && (fit == nil || b.size < fit.size) {
				fit = b
			}
			if big == nil || b.size > big.size {
				big = b
			}
		}
		switch {
		case fit != nil:
		case big != nil:
			fit, big.size = big, l.size
		default:
			fit = &buffer{}
			bufs = append(bufs, fit)
			fit.size = l.size
		}
		fit.freeAt = l.end
		fit.lives = append(fit.lives, l)
	}
	for _, b := range bufs {
		data := make([]float32, b.size)
		m.shared = append(m.shared, data)
		for _, l := range b.lives {
			l.op.out = tensor.New(tensor.WithShape(l.op.shape...), tensor.WithBacking(data[:l.size]))
		}
	}
	return nil
}
