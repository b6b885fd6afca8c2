//go:build stokecuda

package cudaops

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"
	"unsafe"

	"gorgonia.org/cu"
	G "gorgonia.org/gorgonia"
	gtensor "gorgonia.org/tensor"

	"stoke/model"
)

// Backend trains the CNN on a GPU: the trainer's Backend (Start, Eval,
// State, Load, Close). The network is model's gorgonia graph on a
// GraphEngine (model.NewOn): the same ops, gradient and order of execution
// as on the CPU.
//
// A step (Start): with non_blocking the batch goes to the device on the copy
// stream (cuMemcpyHtoDAsync, events around it) and the compute stream waits
// for the copy's event; blocking, the copy goes on the compute stream itself,
// after the previous step's compute (PyTorch's .to(device)). Start returns as
// soon as the batch has left the host buffer (its copy event completed), so
// the caller may reuse that buffer and fetch the next batch; the step's graph
// runs on a goroutine of its own (the engine makes the context current on
// whatever thread runs an op), after the previous step's, and Wait gives its
// result and its copy and compute times from the events. The device input is
// double-buffered: with non_blocking, copying batch N+1 overlaps computing
// batch N; blocking, it cannot.
//
// A uint8 batch (model.Input.U8: round(255·v), CHW, a quarter of the
// bytes) goes to a double-buffered device uint8 input the same way, and the
// compute stream first normalizes it into the float input with
// NewBackend's Normalize (the kernel normalize_u8), then runs the same step.
//
// The loss stays on the device (model.StepScorer, model.Deferred): each
// step's labels go to the device from pinned memory beside its batch, the
// kernels xent_loss and xent_grad compute the loss and its gradient there,
// and the loss and the top-1 hits go to a ring of stepRing slots. Wait then
// returns a Deferred result without waiting for the device; Results (and
// every call that needs the device idle: Eval, State, Load, Close) waits
// once and reads the ring, and Start does so by itself every flushEvery
// steps. A non-finite loss sets a device flag that makes the update of its
// step and of every later one do nothing, and Results names that step. The
// batch buffer of a non_blocking step with an Input.Release is released
// once its copy is seen done (an event query, which does not wait), or at
// the next read of the ring. So a steady non_blocking step waits for the
// device once per flushEvery steps, and allocates nothing. With a GradSync
// installed (data parallel), or blocking copies, the host waits as before:
// for the gradients, or, blocking, for the copy (the meaning of blocking).
type Backend struct {
	dev         *Device
	e           *gpuEngine
	ge          *GraphEngine
	m           *model.Model
	norm        Normalize
	xLen        int
	compute     cu.Stream
	copy        cu.Stream
	nonBlocking bool
	slots       [2]*slot
	next        int
	last        chan struct{} // closed when the last started step's graph has run
	closed      bool
	synced      bool      // a GradSync is installed: a step may have no samples (n = 0)
	nsync       *NCCLSync // the device-side GradSync (ncclsync.go), freed by Close

	score     stepScore            // the GraphEngine's view of the step being run
	ev        [stepRing]stepEvents // step k's events are ev[k%stepRing]
	ring      devBuf               // 2 floats a step (loss, hits), then the flag
	ringHost  []float32            // the ring's copy on the host (Results)
	labels    devBuf               // stepRing·B labels on the device
	labelsPin []byte               // and their pinned host staging
	pinned    *Pinned
	steps     int             // steps started
	inflight  []*Pending      // deferred steps not yet read, in order
	outcomes  []stepOutcome   // read, not yet returned by Results
	spare     []model.Outcome // what Results returns
	held      []heldBuf       // batch buffers whose copies may be in flight
	stopped   error           // the non-finite step Results reported: Start refuses until Load
	stopAt    int             // that step + 1; 0: none
	argsPin   []byte          // stepRing steps' arguments (stepArgs), pinned, copied to the device before each step
	graphs    stepGraphs      // cuda.graphs: the steps' captured graphs (backend_graphs.go)
}

// stepRing is how many steps' results the device keeps; flushEvery how
// many deferred steps run before Start reads them (a wait for the device
// every flushEvery steps), at most stepRing so that no slot is overwritten
// unread.
const (
	stepRing   = 32
	flushEvery = 16
)

// stepEvents time one step: its copy and its compute.
type stepEvents struct {
	copyStart, copyEnd, computeStart, computeEnd cu.Event
}

// stepOutcome is a deferred step's outcome, read from the ring.
type stepOutcome struct {
	pd *Pending
	o  model.Outcome
}

// heldBuf is a caller's batch buffer whose copy step k may still be
// reading; release gives it back.
type heldBuf struct {
	k       int
	release func()
}

// testHostLoss, set only by a test, computes the loss on the host as
// before the step ring (downloads of the logits and target, an upload of
// the gradient, a wait in each Wait): the old path, to compare with.
var testHostLoss bool

// slot is one in-flight step's device input.
type slot struct {
	x       devBuf
	xv      *gtensor.Dense // x as the graph's input value
	xU8     devBuf         // the uint8 input (U8 steps), normalized into x
	pending *Pending
	last    int // the step that last used it, -1: none
}

// testSkipCopyWait, set only by a test, leaves out the compute stream's
// wait for the copy's event: under the stand-in's chaos mode the step then
// reads a half-copied batch, which the test must detect.
var testSkipCopyWait bool

// Pending is a step in flight (a model.Pending).
type Pending struct {
	b     *Backend
	s     *slot
	k     int           // the step's number (Backend.steps)
	done  chan struct{} // closed when its graph has run (been queued)
	res   model.StepResult
	times model.StepTimes
	err   error
	seen  bool
}

var _ model.Pending = (*Pending)(nil)

// NewBackend builds the network on d with fresh weights from opt.Seed (the
// CPU model's initialisation, so both start from the same point). norm is
// what uint8 batches are normalized with (the trainer passes augment.mean
// and augment.std). Its GEMMs are our own at fp32 (NewBackendWith chooses).
func NewBackend(d *Device, spec model.Spec, opt model.Options, nonBlocking bool, norm Normalize) (*Backend, error) {
	return NewBackendWith(d, spec, opt, nonBlocking, norm, EngineOptions{Gemm: GemmOwn})
}

// NewBackendWith is NewBackend with the engine's GEMM and its precision as
// eo says (cuda.gemm, cuda.cublas, train.precision); Gemm tells which it got.
func NewBackendWith(d *Device, spec model.Spec, opt model.Options, nonBlocking bool, norm Normalize, eo EngineOptions) (*Backend, error) {
	if err := eo.check(); err != nil {
		return nil, fmt.Errorf("cudaops: %w", err)
	}
	if err := norm.validate(); err != nil {
		return nil, fmt.Errorf("cudaops: %w", err)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	B, S := opt.Batch, spec.InputSize
	b := &Backend{dev: d, nonBlocking: nonBlocking, norm: norm, xLen: B * 3 * S * S}
	err := d.do(func() error {
		var err error
		if b.compute, err = cu.MakeStream(cu.NonBlocking); err != nil {
			return err
		}
		if b.copy, err = cu.MakeStream(cu.NonBlocking); err != nil {
			return err
		}
		if b.e, err = newGPUEngine(b.compute); err != nil {
			return err
		}
		if err := b.e.selectGemm(eo); err != nil {
			return err
		}
		b.ge = &GraphEngine{d: d, e: b.e, s: b.compute, shared: true}
		for k := range b.slots {
			s := &slot{last: -1}
			xb, err1 := b.e.alloc(b.xLen)
			ub, err2 := b.e.allocU8(b.xLen)
			if err := first(err1, err2); err != nil {
				return err
			}
			s.x, s.xU8 = xb.(devBuf), ub.(devBuf)
			s.xv = gtensor.New(gtensor.Of(gtensor.Float32), gtensor.WithShape(B, 3, S, S), gtensor.FromMemory(uintptr(s.x.p), uintptr(4*b.xLen)))
			b.slots[k] = s
		}
		for k := range b.ev {
			e := &b.ev[k]
			for _, ev := range []*cu.Event{&e.copyStart, &e.copyEnd, &e.computeStart, &e.computeEnd} {
				if *ev, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
					return err
				}
			}
		}
		// The ring, the flag after it, and each slot's labels: allocated once.
		rb, err1 := b.e.alloc(2*stepRing + 1)
		lb, err2 := b.e.allocInt32(len(b.slots) * B)
		if err := first(err1, err2); err != nil {
			return err
		}
		b.ring, b.labels = rb.(devBuf), lb.(devBuf)
		b.e.flag = b.ring.p + cu.DevicePtr(4*2*stepRing)
		return b.compute.Synchronize()
	})
	if err == nil {
		b.pinned = &Pinned{dev: d, live: map[unsafe.Pointer]int{}}
		b.labelsPin, err = b.pinned.Alloc(4 * stepRing * B)
	}
	if err == nil {
		b.argsPin, err = b.pinned.Alloc(4 * stepRing * stepArgsLen)
		b.e.argsByBackend = true
		b.graphs = stepGraphs{mode: eo.Graphs, execs: map[graphKey]*GraphExec{}}
		if b.graphs.mode == "" {
			b.graphs.mode = GraphsAuto
		}
	}
	if err == nil {
		b.ringHost = make([]float32, 2*stepRing+1)
		b.inflight = make([]*Pending, 0, flushEvery)
		b.outcomes = make([]stepOutcome, 0, 2*flushEvery)
		b.spare = make([]model.Outcome, 0, 2*flushEvery)
		b.held = make([]heldBuf, 0, 2*flushEvery)
		b.score = stepScore{on: !testHostLoss, ring: b.ring, eps: opt.LabelSmoothing}
		b.ge.score = &b.score
	}
	if err == nil {
		b.m, err = model.NewOn(b.ge.Engine(), spec, opt)
	}
	if err == nil {
		// The convs' shared workspace, sized by the model just built: no
		// step allocates device memory (the arena is all allocated here).
		err = b.dev.do(func() error { _, err := b.ge.workspace(); return err })
	}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("cudaops: %w", err)
	}
	return b, nil
}

// Start enqueues one training step on a float32 or uint8 batch and returns
// once the batch has been copied off the host (its memory and labels may
// then be reused). Call Wait on the result before a third step is started.
func (b *Backend) Start(in model.Input, lr float32) (model.Pending, error) {
	if err := b.startCheck(lr); err != nil {
		return nil, err
	}
	if err := in.Check(); err != nil {
		return nil, fmt.Errorf("cudaops: %w", err)
	}
	src, bytes, err := b.hostBatch(in)
	if err != nil {
		return nil, err
	}
	if err := b.checkRows(in.Labels, in.N); err != nil {
		return nil, err
	}
	pd, err := b.start(src, bytes, in.U8 != nil, in.Labels, in.N, lr, in.Release)
	runtime.KeepAlive(in.X)
	runtime.KeepAlive(in.U8)
	if err != nil {
		return nil, err
	}
	return pd, nil
}

// hostBatch is where in's pixels are and how many bytes they take: B·3·S·S
// float32s, or as many bytes for a uint8 batch.
func (b *Backend) hostBatch(in model.Input) (unsafe.Pointer, int64, error) {
	if in.U8 != nil {
		if len(in.U8) != b.xLen {
			return nil, 0, fmt.Errorf("cudaops: x has %d bytes, want %d", len(in.U8), b.xLen)
		}
		return unsafe.Pointer(unsafe.SliceData(in.U8)), int64(len(in.U8)), nil
	}
	if len(in.X) != b.xLen {
		return nil, 0, fmt.Errorf("cudaops: x has %d floats, want %d", len(in.X), b.xLen)
	}
	return unsafe.Pointer(unsafe.SliceData(in.X)), int64(4 * len(in.X)), nil
}

func (b *Backend) startCheck(lr float32) error {
	if b.closed {
		return fmt.Errorf("cudaops: backend is closed")
	}
	if b.stopped != nil {
		return fmt.Errorf("cudaops: no step after a non-finite loss (%v): Load a state to train on", b.stopped)
	}
	if !(lr >= 0) || math.IsInf(float64(lr), 0) {
		return fmt.Errorf("cudaops: learning rate must be finite and >= 0, got %v", lr)
	}
	return nil
}

// checkRows checks n and the labels before anything is queued (the model
// checks them again; a bad batch must not get as far as a copy).
func (b *Backend) checkRows(labels []int32, n int) error {
	B, K := b.m.Options().Batch, b.m.Spec().Classes
	least := 1
	if b.synced {
		least = 0
	}
	if n < least || n > B {
		return fmt.Errorf("cudaops: n = %d valid samples, want %d..%d (the batch size)", n, least, B)
	}
	if len(labels) < n {
		return fmt.Errorf("cudaops: %d labels for n = %d valid samples", len(labels), n)
	}
	for i, y := range labels[:n] {
		if y < 0 || int(y) >= K {
			return fmt.Errorf("cudaops: labels[%d] = %d, want 0..%d", i, y, K-1)
		}
	}
	return nil
}

// prepare finishes a slot's input once its bytes are on the device (in x,
// or in xU8 when u8), on the compute stream: a uint8 batch's first n rows
// are normalized into x, and x's rows from n on are zeroed (stale or
// non-finite padding would otherwise reach the gradients as 0·NaN).
func (b *Backend) prepare(s *slot, n int, u8 bool) error {
	B := b.m.Options().Batch
	S := b.m.Spec().InputSize
	if u8 {
		if err := b.e.normalizeU8(s.xU8, s.x, n, S*S, b.norm.Mean, b.norm.Std); err != nil {
			return err
		}
	}
	per := b.xLen / B
	return b.e.zero(s.x, n*per, (B-n)*per)
}

// start copies a checked batch of bytes from src into the next slot's device
// input (x, or xU8 when u8), and its labels into the step's slot of the
// device labels, on the copy stream (non_blocking) or the compute stream,
// after the compute of the step that last used the slot, and hands the step
// to a goroutine that runs it after the previous one. It waits for the copy
// only when blocking or without a release (the host buffer is then free
// when it returns).
func (b *Backend) start(src unsafe.Pointer, bytes int64, u8 bool, labels []int32, n int, lr float32, release func()) (*Pending, error) {
	scoring := b.ge.ScoresSteps()
	if scoring && len(b.inflight) >= flushEvery {
		if err := b.collect(); err != nil {
			return nil, err
		}
	}
	s := b.slots[b.next]
	if s.pending != nil {
		<-s.pending.done // its last step's compute (and the computeEnd record) is queued
	}
	prev := b.last
	if !b.nonBlocking && prev != nil {
		<-prev // blocking: the copy follows the previous step's compute on the compute stream
	}
	k := b.steps
	e := &b.ev[k%stepRing]
	pd := &Pending{b: b, s: s, k: k, done: make(chan struct{})}
	dst := s.x.p
	if u8 {
		dst = s.xU8.p
	}
	B := b.m.Options().Batch
	j := b.next
	lab := devBuf{b.labels.p + cu.DevicePtr(4*B*j), B} // read by the slot's compute, which the copy waits for
	key := graphKey{slot: j, n: n, u8: u8}
	var pin []int32
	if scoring {
		// The pinned slot's last copy (step k-stepRing) was read by a
		// compute that collect has waited for since. The step's goroutine
		// reads its labels there too, not in the caller's slice.
		pin = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(b.labelsPin))), stepRing*B)[B*(k%stepRing):][:n]
		copy(pin, labels[:n])
	}
	stream := b.copy
	if !b.nonBlocking {
		// Blocking, as PyTorch's .to(device) without non_blocking: the
		// copy goes on the compute stream, so it starts only after the
		// previous step's compute, and the host waits for it below. (The
		// legacy NULL stream would not do: it does not synchronize with
		// the compute stream, which is CU_STREAM_NON_BLOCKING.)
		stream = b.compute
	}
	err := b.dev.do(func() error {
		var wait error
		if s.last >= 0 && b.nonBlocking { // the slot's last reader, on the other stream
			wait = stream.Wait(b.ev[s.last%stepRing].computeEnd, 0)
		}
		var labCopy error
		if len(pin) > 0 {
			labCopy = cu.MemcpyHtoDAsync(lab.p, unsafe.Pointer(unsafe.SliceData(pin)), int64(4*n), stream)
		}
		return first(
			wait,
			e.copyStart.Record(stream),
			cu.MemcpyHtoDAsync(dst, src, bytes, stream),
			labCopy,
			e.copyEnd.Record(stream),
		)
	})
	if err != nil {
		return nil, fmt.Errorf("cudaops: step: %w", err)
	}
	// The step is queued behind the copy's event, not behind the host's wait
	// for it below: the event alone orders the compute after the batch.
	var hostLabels []int32
	if !scoring {
		hostLabels = append([]int32(nil), labels[:n]...)
	}
	go func() {
		defer close(pd.done)
		if prev != nil {
			<-prev
		}
		err := b.dev.do(func() error {
			var wait error
			if !testSkipCopyWait {
				wait = b.compute.Wait(e.copyEnd, 0)
			}
			return first(wait, e.computeStart.Record(b.compute), b.putArgs(k, lr))
		})
		if err == nil {
			in := model.Input{Value: s.xv, Labels: hostLabels, N: n}
			if scoring {
				in.Labels = pin
				b.score.labels, b.score.n, b.score.slot, b.score.step = lab, n, k%stepRing, k
			}
			pd.res, err = b.runStep(key, s, in, lr)
		}
		if err2 := b.dev.do(func() error { return e.computeEnd.Record(b.compute) }); err == nil {
			err = err2
		}
		pd.err = err
	}()
	if !b.nonBlocking || release == nil {
		if err := b.dev.do(e.copyEnd.Synchronize); err != nil { // the host buffer is free from here on
			<-pd.done
			return nil, fmt.Errorf("cudaops: step: %w", err)
		}
		if release != nil {
			release()
		}
	} else {
		b.held = append(b.held, heldBuf{k, release})
	}
	if scoring {
		b.inflight = append(b.inflight, pd)
	}
	b.last = pd.done
	s.pending, s.last = pd, k
	b.steps++
	b.next = (b.next + 1) % len(b.slots)
	b.releaseCopied()
	return pd, nil
}

// releaseCopied releases the held batch buffers whose copies are done, in
// order, by event queries (which do not wait).
func (b *Backend) releaseCopied() {
	n := 0
	b.dev.do(func() error {
		for n < len(b.held) && b.ev[b.held[n].k%stepRing].copyEnd.Query() == nil {
			n++
		}
		return nil
	})
	b.releaseHeld(n)
}

// releaseHeld releases the first n held buffers.
func (b *Backend) releaseHeld(n int) {
	for _, h := range b.held[:n] {
		h.release()
	}
	m := copy(b.held, b.held[n:])
	clear(b.held[m:])
	b.held = b.held[:m]
}

// collect waits for every deferred step, reads the ring (one copy, one
// wait) and appends the steps' outcomes to b.outcomes, up to the first
// non-finite loss; every held batch buffer is released.
func (b *Backend) collect() error {
	if len(b.inflight) == 0 {
		b.releaseHeld(len(b.held))
		return nil
	}
	<-b.last
	err := b.dev.do(func() error {
		return first(
			cu.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(b.ringHost)), b.ring.p, int64(4*len(b.ringHost)), b.compute),
			b.compute.Synchronize(),
		)
	})
	b.releaseHeld(len(b.held))
	if err != nil {
		return fmt.Errorf("cudaops: reading the steps' results: %w", err)
	}
	flag := int(int32(math.Float32bits(b.ringHost[2*stepRing])))
	for _, pd := range b.inflight {
		if pd.err != nil { // its Wait reported it
			continue
		}
		if b.stopAt != 0 && pd.k+1 > b.stopAt {
			break // after the non-finite step: it changed nothing
		}
		slot := pd.k % stepRing
		o := model.Outcome{Result: model.StepResult{
			Loss:    float64(b.ringHost[2*slot]),
			Correct: int(b.ringHost[2*slot+1]),
		}}
		e := &b.ev[slot]
		b.dev.do(func() error {
			c, err1 := e.copyStart.Elapsed(e.copyEnd)
			k, err2 := e.computeStart.Elapsed(e.computeEnd)
			o.Times = model.StepTimes{Copy: ms(c), Compute: ms(k)}
			return first(err1, err2)
		})
		if flag == pd.k+1 {
			o.Err = fmt.Errorf("cudaops: step: model.TrainStep: %w: %v; parameters not updated", model.ErrNonFiniteLoss, float32(o.Result.Loss))
			o.Result = model.StepResult{}
			b.stopAt, b.stopped = flag, o.Err
			b.m.UndoSteps(b.steps - pd.k) // this step and the later ones changed nothing
		}
		b.outcomes = append(b.outcomes, stepOutcome{pd, o})
	}
	clear(b.inflight)
	b.inflight = b.inflight[:0]
	return nil
}

// Results waits for the deferred steps and returns the outcomes of those
// whose Wait has returned (a Deferred result), in step order
// (model.Deferred); a step started and not yet waited for is listed by a
// later call. The slice is valid until the next call.
func (b *Backend) Results() ([]model.Outcome, error) {
	if err := b.collect(); err != nil {
		return nil, err
	}
	out := b.spare[:0]
	n := 0
	for n < len(b.outcomes) && b.outcomes[n].pd.seen {
		out = append(out, b.outcomes[n].o)
		n++
	}
	m := copy(b.outcomes, b.outcomes[n:])
	clear(b.outcomes[m:])
	b.outcomes = b.outcomes[:m]
	b.spare = out
	return out, nil
}

var _ model.Deferred = (*Backend)(nil)

// HeldBatches is the most batch buffers (Input.Release) the Backend keeps
// from their callers at once: every flushEvery steps it waits for the
// device and releases them all. A caller with no more buffers than that in
// rotation must not pass a Release (it would wait for one forever).
func (b *Backend) HeldBatches() int { return flushEvery }

// Queued is true: the step computes on the device after Start returns.
func (pd *Pending) Queued() bool { return true }

// Wait blocks until the step is done and returns its loss and hits, and its
// copy and compute times from the step's events; when the loss stays on
// the device, only until the step is queued, with a Deferred result
// (Backend.Results has the figures).
func (pd *Pending) Wait() (model.StepResult, model.StepTimes, error) {
	<-pd.done
	if pd.seen {
		return pd.res, pd.times, pd.err
	}
	pd.seen = true
	b, e := pd.b, &pd.b.ev[pd.k%stepRing]
	if pd.err == nil && pd.res.Deferred {
		return pd.res, pd.times, nil
	}
	if pd.err == nil {
		pd.err = b.dev.do(func() error {
			if err := e.computeEnd.Synchronize(); err != nil {
				return err
			}
			c, err1 := e.copyStart.Elapsed(e.copyEnd)
			k, err2 := e.computeStart.Elapsed(e.computeEnd)
			pd.times = model.StepTimes{Copy: ms(c), Compute: ms(k)}
			return first(err1, err2)
		})
		b.releaseCopied() // the copies this compute read are done
	}
	if pd.err != nil {
		pd.res, pd.times, pd.err = model.StepResult{}, model.StepTimes{}, fmt.Errorf("cudaops: step: %w", pd.err)
	}
	return pd.res, pd.times, pd.err
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// SetGradSync installs s (nil removes it) between backward and the update
// of the following steps, as model.Model.SetGradSync does: data-parallel
// training sums the ranks' gradients there. On a GPU the model hands it a
// host copy of each gradient as backward produces it (GraphEngine.Read,
// which waits for the stream) and uploads the sums back before the update
// (model/gradsync.go); with one installed a step may have no samples
// (n = 0, a rank's empty slice of a short last batch). Steps in flight
// finish first.
//
// The loss then goes through the host again (a step's loss comes with its
// gradients anyway), and Wait waits for the step.
func (b *Backend) SetGradSync(s model.GradSync) { b.installGradSync(s) }

// installGradSync installs s for SetGradSync and for the NCCL sync
// (NewNCCLSync): steps in flight finish first, and while one is installed
// the loss goes through the host.
func (b *Backend) installGradSync(s model.GradSync) {
	b.drain()
	b.m.SetGradSync(s)
	b.synced = s != nil
	b.score.on = !testHostLoss && s == nil
}

// GradSizes is the model's (model.Model.GradSizes).
func (b *Backend) GradSizes() []int { return b.m.GradSizes() }

// drain waits for every step in flight, and reads the deferred steps'
// results for Results.
func (b *Backend) drain() error {
	for _, s := range b.slots {
		if s != nil && s.pending != nil {
			s.pending.Wait()
		}
	}
	return b.collect()
}

// Eval runs the forward pass on a float32 or uint8 batch (normalized on
// the device) and scores the first in.N rows.
func (b *Backend) Eval(in model.Input) (model.EvalResult, error) {
	if err := in.Check(); err != nil {
		return model.EvalResult{}, fmt.Errorf("cudaops: eval: %w", err)
	}
	src, bytes := unsafe.Pointer(unsafe.SliceData(in.X)), 4*len(in.X)
	if in.U8 != nil {
		src, bytes = unsafe.Pointer(unsafe.SliceData(in.U8)), len(in.U8)
	}
	var r model.EvalResult
	err := b.input(src, bytes, in.U8 != nil, in.Labels, in.N, func(xv G.Value) error {
		var err error
		r, err = b.m.Eval(model.Input{Value: xv, Labels: in.Labels, N: in.N})
		return err
	})
	runtime.KeepAlive(in.X)
	runtime.KeepAlive(in.U8)
	return r, err
}

// input puts a batch of bytes (float32s, or uint8 when u8) into the first
// slot's input, synchronously once every step in flight is done, and runs
// f on its value.
func (b *Backend) input(src unsafe.Pointer, bytes int, u8 bool, labels []int32, n int, f func(G.Value) error) error {
	if b.closed {
		return fmt.Errorf("cudaops: backend is closed")
	}
	want := 4 * b.xLen
	if u8 {
		want = b.xLen
	}
	if bytes != want {
		return fmt.Errorf("cudaops: eval: batch of %d bytes, want %d", bytes, want)
	}
	if labels != nil {
		if err := b.checkRows(labels, n); err != nil {
			return err
		}
	} else if n < 1 || n > b.m.Options().Batch {
		return fmt.Errorf("cudaops: n = %d valid samples, want 1..%d (the batch size)", n, b.m.Options().Batch)
	}
	if err := b.drain(); err != nil {
		return fmt.Errorf("cudaops: eval: %w", err)
	}
	s := b.slots[0]
	dst := s.x.p
	if u8 {
		dst = s.xU8.p
	}
	err := b.dev.do(func() error {
		return first(cu.MemcpyHtoDAsync(dst, src, int64(bytes), b.compute), b.prepare(s, n, u8), b.compute.Synchronize())
	})
	if err == nil {
		err = f(s.xv)
	}
	if err != nil {
		return fmt.Errorf("cudaops: eval: %w", err)
	}
	return nil
}

// State downloads the weights and the optimizer state (momentum buffers and
// the step count), named and laid out as model.Model's. A failed read (a
// device error, a closed backend) is returned, never a partial state.
func (b *Backend) State() (params, optState []model.NamedTensor, err error) {
	if b.closed {
		return nil, nil, errors.New("cudaops: reading parameters: the backend is closed")
	}
	if err = b.drain(); err == nil {
		params, optState, err = b.m.State()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cudaops: reading parameters from the device: %w", err)
	}
	return params, optState, nil
}

// Load uploads parameters and optimizer state (model.Model.Load's contract),
// and trains on after a non-finite loss.
func (b *Backend) Load(params, optState []model.NamedTensor) error {
	if err := b.drain(); err != nil {
		return err
	}
	if err := b.m.Load(params, optState); err != nil {
		return err
	}
	b.stopped, b.stopAt = nil, 0
	return b.dev.do(func() error {
		return first(b.e.zero(b.ring, 2*stepRing, 1), b.compute.Synchronize())
	})
}

// NumParams is the number of trainable scalars.
func (b *Backend) NumParams() int { return b.m.NumParams() }

// Gemm is the GEMM the backend's engine runs every product on, and at
// what precision.
func (b *Backend) Gemm() GemmInfo { return b.e.gemmInfo }

// Close frees the device memory, streams and events.
func (b *Backend) Close() {
	if b.closed {
		return
	}
	b.closed = true
	b.drain()
	if b.m != nil {
		b.m.Close()
	}
	if b.nsync != nil {
		b.nsync.free()
	}
	b.graphs.free(b.dev)
	b.dev.do(func() error {
		b.compute.Synchronize()
		for k := range b.ev {
			e := &b.ev[k]
			for _, ev := range []*cu.Event{&e.copyStart, &e.copyEnd, &e.computeStart, &e.computeEnd} {
				if *ev != (cu.Event{}) {
					cu.DestroyEvent(ev)
				}
			}
		}
		if b.e != nil {
			b.e.free()
		}
		b.compute.Destroy()
		b.copy.Destroy()
		return nil
	})
	if b.pinned != nil {
		b.pinned.freeAll()
	}
}
