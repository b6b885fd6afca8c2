package model

import (
	"runtime/debug"
	"slices"
	"unsafe"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Activation gradients share memory by liveness (the CPU engine's
// ResNets). Each op owns its output value (ops.go), so a backward pass
// held every layer's input gradient at once: for resnet50 at 224 px,
// batch 4, about 450 MB that PyTorch, freeing each gradient once it is
// consumed, never holds together. Here the ops whose value is an
// activation gradient written by one op of ours alone (a conv's, a
// BatchNorm's and a max-pool's input gradient, and the shortcut's that a
// BatchNorm-add's backward writes and another op hands out:
// kernelOp.share, kernelOp.writer) get buffers that several of them use
// in turn, one after another's last reader has run.
//
// The order is the training machine's own: a dry run of it in which no op
// of ours computes, each only recording itself and the values it is given
// (opTrace). A value's life runs from its writer to the last op of ours
// that reads it; two values share a buffer only when one's life ends
// before the other's begins. gorgonia's own ops (the Add that sums a
// fan-out's gradients, writing into its first input or into the value its
// register last held) are not in the trace: a value one reads or writes
// lives until the first op of ours that consumes that Add's result, by
// which time it has run. A value the dry run did not see written once and
// read keeps a buffer of its own.

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
	tr, err := m.dryRun(s)
	if err != nil {
		return err
	}
	// When each op of ours ran (each runs once), and the lives its inputs
	// give: a value lives until its last reader.
	at := map[*kernelOp]int{}
	writes := map[*kernelOp]int{}
	extend := func(p *float32, t int) {
		if l := lives[p]; l != nil {
			l.end = max(l.end, t)
		}
	}
	for t, op := range tr.ops {
		if writes[op]++; writes[op] == 1 {
			at[op] = t
		}
		for _, v := range tr.in[t] {
			extend(dataOf(v), t)
		}
	}
	// gorgonia's own ops (the Add that sums a fan-out's gradients) are not
	// in the trace, but each ran before every consumer of its value: a value
	// one reads, or writes into (its first input, or the value its register
	// last held, one of ours), lives until the first op of ours among its
	// consumers' (the run's end when none is). A value it writes into is
	// then read as that value, through its readers' lives.
	before := map[int64]int{}
	var ranBefore func(n *G.Node) int
	ranBefore = func(n *G.Node) int {
		if t, ok := before[n.ID()]; ok {
			return t
		}
		t := len(tr.ops)
		before[n.ID()] = t
		for it := m.g.To(n.ID()); it != nil && it.Next(); {
			c, ok := it.Node().(*G.Node)
			if !ok {
				continue
			}
			if op, ours := c.Op().(*kernelOp); ours {
				if i, ran := at[op]; ran {
					t = min(t, i)
				}
				continue
			}
			t = min(t, ranBefore(c))
		}
		before[n.ID()] = t
		return t
	}
	for _, n := range m.g.AllNodes() {
		if _, ours := n.Op().(*kernelOp); ours || n.Op() == nil {
			continue
		}
		t := ranBefore(n)
		extend(dataOf(n.Value()), t)
		for it := m.g.From(n.ID()); it != nil && it.Next(); {
			if c, ok := it.Node().(*G.Node); ok {
				extend(dataOf(c.Value()), t)
			}
		}
	}
	var order []*life
	for _, l := range lives {
		w := l.op
		if l.op.writer != nil {
			w = l.op.writer
		}
		if t, ran := at[w]; ran && writes[w] == 1 && writes[l.op] == 1 && l.end > t {
			l.start = t
			order = append(order, l)
		}
	}
	slices.SortFunc(order, func(a, b *life) int { return a.start - b.start })
	// Greedy by start: the smallest free buffer that holds the value (of
	// those, the one freed last, whose memory the cache is likeliest to
	// hold), else the largest free one grown to it, else a new one.
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
			if b.size >= l.size && (fit == nil || b.size < fit.size || b.size == fit.size && b.freeAt > fit.freeAt) {
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
	// The dry run left the nodes bound to the values given up, into some
	// of which gorgonia's Add wrote (memory now resident): a second one
	// binds them to the values kept, and what was given up goes back to
	// the OS instead of into the peak RSS.
	_, err = m.dryRun(s)
	debug.FreeOSMemory()
	return err
}

// dryRun runs the training machine with s's ops only recording
// themselves (opTrace), none computing.
func (m *Model) dryRun(s *opSet) (*opTrace, error) {
	tr := &opTrace{}
	s.trace = tr
	defer func() { s.trace = nil }()
	return tr, run(m.train)
}
