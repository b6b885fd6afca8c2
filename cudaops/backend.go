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

	"stoke/model"
)

// Backend trains the CNN on a GPU: the trainer's Backend (and StepTimer).
//
// A step: with non_blocking the batch goes to the device on the copy stream
// (cuMemcpyHtoDAsync, events around it) and the compute stream waits for the
// copy's event; blocking, the copy goes on the compute stream itself, after
// the previous step's compute (PyTorch's .to(device)). The compute stream
// then runs forward, backward and SGD, and copies the logits and per-row
// losses into pinned host memory. StartStep returns as soon as the batch has
// left the host buffer (its copy event completed), so the caller may reuse
// that buffer and fetch the next batch while the GPU computes; Wait gives
// the step's result. The device input is double-buffered: with non_blocking,
// copying batch N+1 overlaps computing batch N; blocking, it cannot.
//
// The U8 methods take uint8 batches (round(255·v), CHW, a quarter of the
// bytes): the bytes go to a double-buffered device uint8 input the same way,
// and the compute stream first normalizes them into the float input with
// NewBackend's Normalize (the kernel normalize_u8), then runs the same step.
type Backend struct {
	dev         *Device
	e           *gpuEngine
	nt          *net
	compute     cu.Stream
	copy        cu.Stream
	nonBlocking bool
	slots       [2]*slot
	next        int
	lastCopy    time.Duration
	lastCompute time.Duration
	closed      bool
}

// slot is one in-flight step: its device input and pinned host results.
type slot struct {
	x, labels                devBuf
	xU8                      devBuf    // the uint8 input (U8 steps), normalized into x
	hostLabels               []int32   // pinned
	hostLogits, hostLoss     []float32 // pinned
	copyStart, copyEnd       cu.Event
	computeStart, computeEnd cu.Event
	pending                  *Pending
	hostMem                  [][]byte
}

// testSkipCopyWait, set only by a test, leaves out the compute stream's
// wait for the copy's event: under the stand-in's chaos mode the step then
// reads a half-copied batch, which the test must detect.
var testSkipCopyWait bool

// Pending is a step in flight.
type Pending struct {
	b      *Backend
	s      *slot
	labels []int32
	n      int
	done   bool
	res    model.StepResult
	err    error
}

// NewBackend builds the network on d with fresh weights from opt.Seed (the
// CPU model's initialisation, so both start from the same point). norm is
// what the U8 methods normalize uint8 batches with (the trainer passes
// augment.mean and augment.std).
func NewBackend(d *Device, spec model.Spec, opt model.Options, nonBlocking bool, norm Normalize) (*Backend, error) {
	if err := norm.validate(); err != nil {
		return nil, fmt.Errorf("cudaops: %w", err)
	}
	init, err := model.New(spec, opt) // the reference initialisation and validation
	if err != nil {
		return nil, err
	}
	params, state := init.Params(), init.OptimizerState()
	init.Close()
	b := &Backend{dev: d, nonBlocking: nonBlocking}
	err = d.do(func() error {
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
		if b.nt, err = newNet(b.e, spec, opt, norm); err != nil {
			return err
		}
		B, K := opt.Batch, spec.Classes
		for k := range b.slots {
			s := &slot{}
			xb, err1 := b.e.alloc(b.nt.xLen)
			lb, err2 := b.e.alloc(B)
			ub, err3 := b.e.allocU8(b.nt.xLen)
			if err := first(err1, err2, err3); err != nil {
				return err
			}
			s.x, s.labels, s.xU8 = xb.(devBuf), lb.(devBuf), ub.(devBuf)
			for _, ev := range []*cu.Event{&s.copyStart, &s.copyEnd, &s.computeStart, &s.computeEnd} {
				if *ev, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
					return err
				}
			}
			mem := func(n int) []byte {
				if err != nil {
					return make([]byte, 4*n)
				}
				var m []byte
				m, err = d.pinned.Alloc(4 * n)
				s.hostMem = append(s.hostMem, m)
				return m
			}
			s.hostLabels = unsafe.Slice((*int32)(unsafe.Pointer(&mem(B)[0])), B)
			s.hostLogits = unsafe.Slice((*float32)(unsafe.Pointer(&mem(B * K)[0])), B*K)
			s.hostLoss = unsafe.Slice((*float32)(unsafe.Pointer(&mem(B)[0])), B)
			if err != nil {
				return err
			}
			b.slots[k] = s
		}
		if err := b.nt.load(params, state); err != nil {
			return err
		}
		// The zeroing (cuMemsetD32Async) and the uploads above are queued on
		// the compute stream, while a step's first copy may go on the copy
		// stream: finish them before any step can start.
		return b.compute.Synchronize()
	})
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("cudaops: %w", err)
	}
	return b, nil
}

// StartStep enqueues one training step and returns once the batch x has been
// copied off the host (x and labels may then be reused). Call Wait on the
// result before a third step is started.
func (b *Backend) StartStep(x []float32, labels []int32, n int, lr float32) (*Pending, error) {
	if err := b.startCheck(lr); err != nil {
		return nil, err
	}
	if err := b.nt.check(x, labels, n); err != nil {
		return nil, fmt.Errorf("cudaops: %w", err)
	}
	pd, err := b.start(unsafe.Pointer(unsafe.SliceData(x)), int64(4*len(x)), false, labels, n, lr)
	runtime.KeepAlive(x)
	return pd, err
}

// StartStepU8 is StartStep for a uint8 batch (round(255·v), CHW,
// Batch*3*S*S bytes): it returns once x's bytes have left the host, and the
// device normalizes them before the step.
func (b *Backend) StartStepU8(x []uint8, labels []int32, n int, lr float32) (*Pending, error) {
	if err := b.startCheck(lr); err != nil {
		return nil, err
	}
	if err := b.nt.checkU8(x, labels, n); err != nil {
		return nil, fmt.Errorf("cudaops: %w", err)
	}
	pd, err := b.start(unsafe.Pointer(unsafe.SliceData(x)), int64(len(x)), true, labels, n, lr)
	runtime.KeepAlive(x)
	return pd, err
}

func (b *Backend) startCheck(lr float32) error {
	if b.closed {
		return fmt.Errorf("cudaops: backend is closed")
	}
	if !(lr >= 0) || math.IsInf(float64(lr), 0) {
		return fmt.Errorf("cudaops: learning rate must be finite and >= 0, got %v", lr)
	}
	return nil
}

// start copies a checked batch of bytes from src into the next slot's device
// input (x, or xU8 when u8), queues the step behind the copy and waits for
// the copy only.
func (b *Backend) start(src unsafe.Pointer, bytes int64, u8 bool, labels []int32, n int, lr float32) (*Pending, error) {
	s := b.slots[b.next]
	if s.pending != nil && !s.pending.done {
		s.pending.Wait() // its device input is about to be overwritten; its result is kept
	}
	pd := &Pending{b: b, s: s, labels: append([]int32(nil), labels[:n]...), n: n}
	dst := s.x.p
	if u8 {
		dst = s.xU8.p
	}
	err := b.dev.do(func() error {
		clear(s.hostLabels)
		copy(s.hostLabels, labels[:n])
		if b.nonBlocking {
			if err := first(
				s.copyStart.Record(b.copy),
				cu.MemcpyHtoDAsync(dst, src, bytes, b.copy),
				cu.MemcpyHtoDAsync(s.labels.p, unsafe.Pointer(&s.hostLabels[0]), int64(4*len(s.hostLabels)), b.copy),
				s.copyEnd.Record(b.copy),
			); err != nil {
				return err
			}
		} else {
			// Blocking, as PyTorch's .to(device) without non_blocking: the
			// copy goes on the compute stream, so it starts only after the
			// previous step's compute, and the host waits for it below. (The
			// legacy NULL stream would not do: it does not synchronize with
			// the compute stream, which is CU_STREAM_NON_BLOCKING.)
			if err := first(
				s.copyStart.Record(b.compute),
				cu.MemcpyHtoDAsync(dst, src, bytes, b.compute),
				cu.MemcpyHtoDAsync(s.labels.p, unsafe.Pointer(&s.hostLabels[0]), int64(4*len(s.hostLabels)), b.compute),
				s.copyEnd.Record(b.compute),
			); err != nil {
				return err
			}
		}
		nt := b.nt
		nt.x, nt.xU8, nt.labels = s.x, s.xU8, s.labels
		var wait error
		if !testSkipCopyWait {
			wait = b.compute.Wait(s.copyEnd, 0)
		}
		if err := first(
			wait,
			s.computeStart.Record(b.compute),
			nt.prepare(n, u8), // normalize a uint8 batch, zero the padding rows
			nt.forward(),
			nt.backward(n, lr),
			cu.MemcpyDtoHAsync(unsafe.Pointer(&s.hostLogits[0]), nt.logits.(devBuf).p, int64(4*len(s.hostLogits)), b.compute),
			cu.MemcpyDtoHAsync(unsafe.Pointer(&s.hostLoss[0]), nt.rowLoss.(devBuf).p, int64(4*len(s.hostLoss)), b.compute),
			s.computeEnd.Record(b.compute),
		); err != nil {
			return err
		}
		return s.copyEnd.Synchronize() // the host buffer is free from here on
	})
	if err != nil {
		return nil, fmt.Errorf("cudaops: step: %w", err)
	}
	s.pending = pd
	b.next = (b.next + 1) % len(b.slots)
	return pd, nil
}

// Wait blocks until the step is done and returns its loss and hits; it also
// sets the backend's LastStepTimes from the step's events.
func (pd *Pending) Wait() (model.StepResult, error) {
	if pd.done {
		return pd.res, pd.err
	}
	pd.done = true
	b, s := pd.b, pd.s
	pd.err = b.dev.do(func() error {
		if err := s.computeEnd.Synchronize(); err != nil {
			return err
		}
		c, err1 := s.copyStart.Elapsed(s.copyEnd)
		k, err2 := s.computeStart.Elapsed(s.computeEnd)
		b.lastCopy, b.lastCompute = ms(c), ms(k)
		return first(err1, err2)
	})
	if pd.err == nil {
		pd.res, pd.err = scoreTrain(s.hostLogits, s.hostLoss, pd.labels, pd.n, b.nt.spec.Classes)
	}
	if pd.err != nil {
		pd.err = fmt.Errorf("cudaops: step: %w", pd.err)
	}
	return pd.res, pd.err
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// TrainStep is StartStep then Wait: one step, synchronously.
func (b *Backend) TrainStep(x []float32, labels []int32, n int, lr float32) (model.StepResult, error) {
	pd, err := b.StartStep(x, labels, n, lr)
	if err != nil {
		return model.StepResult{}, err
	}
	return pd.Wait()
}

// TrainStepU8 is StartStepU8 then Wait.
func (b *Backend) TrainStepU8(x []uint8, labels []int32, n int, lr float32) (model.StepResult, error) {
	pd, err := b.StartStepU8(x, labels, n, lr)
	if err != nil {
		return model.StepResult{}, err
	}
	return pd.Wait()
}

// LastStepTimes is the copy and compute time of the last step waited for,
// from CUDA events (trainer.StepTimer).
func (b *Backend) LastStepTimes() (copy, compute time.Duration) { return b.lastCopy, b.lastCompute }

// drain waits for every step in flight.
func (b *Backend) drain() {
	for _, s := range b.slots {
		if s != nil && s.pending != nil {
			s.pending.Wait()
		}
	}
}

// EvalStep runs the forward pass and scores the first n rows.
func (b *Backend) EvalStep(x []float32, labels []int32, n int) (model.EvalResult, error) {
	return b.eval(func(nt *net) ([]float32, error) { return nt.logitsOf(x, labels, n) }, labels, n)
}

// EvalStepU8 is EvalStep for a uint8 batch, normalized on the device.
func (b *Backend) EvalStepU8(x []uint8, labels []int32, n int) (model.EvalResult, error) {
	return b.eval(func(nt *net) ([]float32, error) { return nt.logitsOfU8(x, labels, n) }, labels, n)
}

func (b *Backend) eval(logitsOf func(*net) ([]float32, error), labels []int32, n int) (model.EvalResult, error) {
	var r model.EvalResult
	logits, err := b.logits(logitsOf)
	if err == nil {
		r = scoreEval(logits, labels, n, b.nt.spec.Classes)
	}
	if err != nil {
		return model.EvalResult{}, fmt.Errorf("cudaops: eval: %w", err)
	}
	return r, nil
}

// Logits returns the first n rows of logits for x (the parity tests).
func (b *Backend) Logits(x []float32, n int) ([]float32, error) {
	return b.logits(func(nt *net) ([]float32, error) { return nt.logitsOf(x, nil, n) })
}

// LogitsU8 is Logits for a uint8 batch.
func (b *Backend) LogitsU8(x []uint8, n int) ([]float32, error) {
	return b.logits(func(nt *net) ([]float32, error) { return nt.logitsOfU8(x, nil, n) })
}

// logits runs a synchronous forward pass on the first slot's inputs, once
// every step in flight is done.
func (b *Backend) logits(logitsOf func(*net) ([]float32, error)) ([]float32, error) {
	if b.closed {
		return nil, fmt.Errorf("cudaops: backend is closed")
	}
	b.drain()
	var out []float32
	err := b.dev.do(func() error {
		s := b.slots[0]
		b.nt.x, b.nt.xU8, b.nt.labels = s.x, s.xU8, s.labels
		var err error
		out, err = logitsOf(b.nt)
		return err
	})
	return out, err
}

// State downloads the weights and the optimizer state (momentum buffers and
// the step count), named and laid out as model.Model's. A failed read (a
// device error, a closed backend) is returned, never a partial state.
func (b *Backend) State() (params, optState []model.NamedTensor, err error) {
	if b.closed {
		return nil, nil, errors.New("cudaops: reading parameters: the backend is closed")
	}
	b.drain()
	err = b.dev.do(func() error {
		var err error
		if params, err = b.nt.readParams(false); err != nil {
			return err
		}
		optState, err = b.nt.readParams(true)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cudaops: reading parameters from the device: %w", err)
	}
	return params, optState, nil
}

// Load uploads parameters and optimizer state (model.Model.Load's contract).
func (b *Backend) Load(params, optState []model.NamedTensor) error {
	b.drain()
	return b.dev.do(func() error {
		if err := b.nt.load(params, optState); err != nil {
			return err
		}
		return b.compute.Synchronize() // the host slices may be reused
	})
}

// NumParams is the number of trainable scalars.
func (b *Backend) NumParams() int { return b.nt.numParams() }

// Close frees the device memory, streams, events and pinned result buffers.
func (b *Backend) Close() {
	if b.closed {
		return
	}
	b.closed = true
	b.drain()
	b.dev.do(func() error {
		b.compute.Synchronize()
		for _, s := range b.slots {
			if s == nil {
				continue
			}
			for _, ev := range []*cu.Event{&s.copyStart, &s.copyEnd, &s.computeStart, &s.computeEnd} {
				cu.DestroyEvent(ev)
			}
			for _, m := range s.hostMem {
				b.dev.pinned.Free(m)
			}
		}
		if b.e != nil {
			b.e.free()
		}
		b.compute.Destroy()
		b.copy.Destroy()
		return nil
	})
}
