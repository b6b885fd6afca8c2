package cudaops

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"stoke/model"
)

// buffer is an engine's array: device memory on the GPU, a slice on the CPU.
type buffer any

// engine is the set of kernels the network runs, one method per kernel of
// kernels.cu. The GPU engine launches them on its compute stream, in order;
// the CPU engine runs ref.go's mirrors. Everything above an engine (net.go)
// is shared, so the CPU tests check the GPU's sequence of kernels too.
type engine interface {
	alloc(n int) (buffer, error)      // n float32s, zeroed
	allocInt32(n int) (buffer, error) // n int32s, zeroed
	allocU8(n int) (buffer, error)    // n bytes, zeroed
	upload(dst buffer, src []float32) error
	uploadInt32(dst buffer, src []int32) error
	uploadU8(dst buffer, src []uint8) error
	download(dst []float32, src buffer) error
	zero(b buffer, off, n int) error // float32s [off, off+n)

	im2col(x, col buffer, B, C, H, W, K, P int) error
	col2im(dcol, dx buffer, B, C, H, W, K, P int) error
	sgemm(tA, tB bool, M, N, Kd int, a, b, c buffer) error
	biasReLU(z, bias, y buffer, B, Cout, HW int) error
	reluBackward(dy, y, dz buffer, B, Cout, HW int) error
	rowSums(a, out buffer, R, N int) error
	colSums(a, out buffer, R, N int) error
	maxPool(x, y, arg buffer, BC, H, W int) error
	maxPoolBackward(dy, arg, dx buffer, BC, H, W int) error
	avgPool(x, y buffer, BC, HW int) error
	avgPoolBackward(dy, dx buffer, BC, HW int) error
	addRows(y, bias buffer, R, N int) error
	softmaxXent(z, labels, loss, dz buffer, B, K, n int) error
	sgd(w, grad, v buffer, n int, lr, mom, wd float32, first bool) error
	normalizeU8(x, y buffer, B, HW int, mean, std [3]float32) error
}

// Normalize is the per-channel normalization of uint8 batches (values
// round(255·v), CHW), done on the engine: (x/255 - Mean[c]) / Std[c], as
// augment.NormalizeU8 does on the host. Float32 batches come normalized.
type Normalize struct{ Mean, Std [3]float32 }

func (nz Normalize) validate() error {
	for c := range 3 {
		m, s := float64(nz.Mean[c]), float64(nz.Std[c])
		if math.IsNaN(m) || math.IsInf(m, 0) || !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("normalize: mean %v, std %v: want finite means and finite stds > 0", nz.Mean, nz.Std)
		}
	}
	return nil
}

// tensor is a parameter: weights, gradient and momentum, in PyTorch's layout
// (conv<i>.weight (Cout,Cin,K,K) is the GEMM's (Cout, Cin*K*K) as it is).
type tensor struct {
	name    string
	shape   []int
	n       int
	w, g, v buffer
}

// convLayer is one conv block and its activations, kept for the backward.
type convLayer struct {
	C, Cout, H, W, K int
	pool             bool
	w, b             *tensor
	col              buffer // im2col of the input; reused as dcol in the backward
	z                buffer // conv output (Cout, B*H*W); reused as dz
	y                buffer // after bias + ReLU (B, Cout, H, W)
	dy               buffer // gradient wrt y
	out, arg, dOut   buffer // pooled output, argmax, its gradient (= y, -, dy without pool)
}

// net is the CNN of model.Spec as a fixed sequence of kernels on an engine:
// the same network, parameters, loss and SGD as the gorgonia model, which
// is its reference (ref_test.go, and parity_test.go on a GPU).
type net struct {
	e      engine
	spec   model.Spec
	opt    model.Options
	norm   Normalize
	layers []*convLayer
	params []*tensor
	fcW    *tensor
	fcB    *tensor

	x, labels                buffer
	xU8                      buffer // a uint8 batch, normalized into x
	feat, dfeat              buffer // (B, C) after the global average pool
	dLast                    buffer // gradient wrt the last block's output
	logits, dlogits, rowLoss buffer
	steps                    int64
	xLen                     int
}

func newNet(e engine, spec model.Spec, opt model.Options, norm Normalize) (*net, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if opt.Batch < 1 {
		return nil, fmt.Errorf("model.options.batch: must be >= 1, got %d", opt.Batch)
	}
	if err := norm.validate(); err != nil {
		return nil, err
	}
	nt := &net{e: e, spec: spec, opt: opt, norm: norm}
	B, S, K := opt.Batch, spec.InputSize, spec.Classes
	var err error
	buf := func(n int) buffer {
		if err != nil {
			return nil
		}
		var b buffer
		b, err = e.alloc(n)
		return b
	}
	param := func(name string, shape ...int) *tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		t := &tensor{name: name, shape: shape, n: n, w: buf(n), g: buf(n), v: buf(n)}
		nt.params = append(nt.params, t)
		return t
	}
	nt.xLen = B * 3 * S * S
	nt.x = buf(nt.xLen)
	if err == nil {
		nt.labels, err = e.allocInt32(B)
	}
	if err == nil {
		nt.xU8, err = e.allocU8(nt.xLen)
	}
	C, H := 3, S
	for i, c := range spec.Conv {
		l := &convLayer{C: C, Cout: c.Channels, H: H, W: H, K: c.Kernel, pool: c.Pool}
		l.w = param(fmt.Sprintf("conv%d.weight", i), c.Channels, C, c.Kernel, c.Kernel)
		l.b = param(fmt.Sprintf("conv%d.bias", i), c.Channels)
		hw := H * H
		l.col = buf(C * c.Kernel * c.Kernel * B * hw)
		l.z = buf(c.Channels * B * hw)
		l.y = buf(B * c.Channels * hw)
		l.dy = buf(B * c.Channels * hw)
		l.out, l.dOut = l.y, l.dy
		if c.Pool {
			H /= 2
			l.out = buf(B * c.Channels * H * H)
			l.dOut = buf(B * c.Channels * H * H)
			if err == nil {
				l.arg, err = e.allocInt32(B * c.Channels * H * H)
			}
		}
		nt.layers = append(nt.layers, l)
		C = c.Channels
	}
	nt.fcW = param("fc.weight", K, C)
	nt.fcB = param("fc.bias", K)
	nt.feat, nt.dfeat = buf(B*C), buf(B*C)
	nt.logits, nt.dlogits, nt.rowLoss = buf(B*K), buf(B*K), buf(B)
	if err != nil {
		return nil, fmt.Errorf("cudaops: allocating the network: %w", err)
	}
	return nt, nil
}

// stage checks a batch and puts it in the network's input: the first n rows
// of x, the rest zeroed on the engine (stale or non-finite padding would
// otherwise reach the weight gradients as 0·NaN), and the labels.
func (nt *net) stage(x []float32, labels []int32, n int) error {
	if err := nt.check(x, labels, n); err != nil {
		return err
	}
	return first(nt.e.upload(nt.x, x), nt.prepare(n, false), nt.uploadLabels(labels, n))
}

// stageU8 is stage for a uint8 batch: its bytes go to xU8, and the first n
// rows are normalized on the engine into x (the padding is zeroed, as in
// stage, so both give the network the same input).
func (nt *net) stageU8(x []uint8, labels []int32, n int) error {
	if err := nt.checkU8(x, labels, n); err != nil {
		return err
	}
	return first(nt.e.uploadU8(nt.xU8, x), nt.prepare(n, true), nt.uploadLabels(labels, n))
}

func (nt *net) check(x []float32, labels []int32, n int) error {
	if len(x) != nt.xLen {
		return fmt.Errorf("x has %d floats, want %d (B=%d x 3 x %d x %d)", len(x), nt.xLen, nt.opt.Batch, nt.spec.InputSize, nt.spec.InputSize)
	}
	return nt.checkRows(labels, n)
}

func (nt *net) checkU8(x []uint8, labels []int32, n int) error {
	if len(x) != nt.xLen {
		return fmt.Errorf("x has %d bytes, want %d (B=%d x 3 x %d x %d)", len(x), nt.xLen, nt.opt.Batch, nt.spec.InputSize, nt.spec.InputSize)
	}
	return nt.checkRows(labels, n)
}

func (nt *net) checkRows(labels []int32, n int) error {
	B, K := nt.opt.Batch, nt.spec.Classes
	if n < 1 || n > B {
		return fmt.Errorf("n = %d valid samples, want 1..%d (the batch size)", n, B)
	}
	if labels == nil {
		return errors.New("labels are missing")
	}
	if len(labels) < n {
		return fmt.Errorf("%d labels for n = %d valid samples", len(labels), n)
	}
	for i, y := range labels[:n] {
		if y < 0 || int(y) >= K {
			return fmt.Errorf("labels[%d] = %d, want 0..%d", i, y, K-1)
		}
	}
	return nil
}

// prepare finishes the input once the batch's bytes are on the engine (in x,
// or in xU8 when u8): a uint8 batch's first n rows are normalized into x,
// and x's rows from n on are zeroed. The GPU backend runs it on its compute
// stream after the copy; stage and stageU8 run it after their upload.
func (nt *net) prepare(n int, u8 bool) error {
	B, S := nt.opt.Batch, nt.spec.InputSize
	if u8 {
		if err := nt.e.normalizeU8(nt.xU8, nt.x, n, S*S, nt.norm.Mean, nt.norm.Std); err != nil {
			return err
		}
	}
	per := nt.xLen / B
	return nt.e.zero(nt.x, n*per, (B-n)*per)
}

// uploadLabels puts the first n labels, zero-padded to the batch, on the engine.
func (nt *net) uploadLabels(labels []int32, n int) error {
	lab := make([]int32, nt.opt.Batch)
	copy(lab, labels[:n])
	return nt.e.uploadInt32(nt.labels, lab)
}

// forward computes the logits of the staged batch.
func (nt *net) forward() error {
	e, B := nt.e, nt.opt.Batch
	a := nt.x
	for _, l := range nt.layers {
		hw, ckk := l.H*l.W, l.C*l.K*l.K
		if err := first(
			e.im2col(a, l.col, B, l.C, l.H, l.W, l.K, l.K/2),
			e.sgemm(false, false, l.Cout, B*hw, ckk, l.w.w, l.col, l.z),
			e.biasReLU(l.z, l.b.w, l.y, B, l.Cout, hw),
		); err != nil {
			return err
		}
		if l.pool {
			if err := e.maxPool(l.y, l.out, l.arg, B*l.Cout, l.H, l.W); err != nil {
				return err
			}
		}
		a = l.out
	}
	last := nt.layers[len(nt.layers)-1]
	C, K := last.Cout, nt.spec.Classes
	hw := last.H * last.W
	if last.pool {
		hw = (last.H / 2) * (last.W / 2)
	}
	return first(
		e.avgPool(a, nt.feat, B*C, hw),
		e.sgemm(false, true, B, K, C, nt.feat, nt.fcW.w, nt.logits),
		e.addRows(nt.logits, nt.fcB.w, B, K),
	)
}

// backward computes the loss rows and every parameter's gradient, then
// takes one SGD step.
func (nt *net) backward(n int, lr float32) error {
	e, B, K := nt.e, nt.opt.Batch, nt.spec.Classes
	last := nt.layers[len(nt.layers)-1]
	C := last.Cout
	hw := last.H * last.W
	if last.pool {
		hw = (last.H / 2) * (last.W / 2)
	}
	if err := first(
		e.softmaxXent(nt.logits, nt.labels, nt.rowLoss, nt.dlogits, B, K, n),
		e.sgemm(true, false, K, C, B, nt.dlogits, nt.feat, nt.fcW.g),
		e.colSums(nt.dlogits, nt.fcB.g, B, K),
		e.sgemm(false, false, B, C, K, nt.dlogits, nt.fcW.w, nt.dfeat),
		e.avgPoolBackward(nt.dfeat, last.dOut, B*C, hw),
	); err != nil {
		return err
	}
	for i := len(nt.layers) - 1; i >= 0; i-- {
		l := nt.layers[i]
		lhw, ckk := l.H*l.W, l.C*l.K*l.K
		if l.pool {
			if err := first(
				e.zero(l.dy, 0, B*l.Cout*lhw),
				e.maxPoolBackward(l.dOut, l.arg, l.dy, B*l.Cout, l.H, l.W),
			); err != nil {
				return err
			}
		}
		dz, dcol := l.z, l.col // the forward's buffers, no longer needed once read
		if err := first(
			e.reluBackward(l.dy, l.y, dz, B, l.Cout, lhw),
			e.rowSums(dz, l.b.g, l.Cout, B*lhw),
			e.sgemm(false, true, l.Cout, ckk, B*lhw, dz, l.col, l.w.g),
		); err != nil {
			return err
		}
		if i > 0 {
			if err := first(
				e.sgemm(true, false, ckk, B*lhw, l.Cout, l.w.w, dz, dcol),
				e.col2im(dcol, nt.layers[i-1].dOut, B, l.C, l.H, l.W, l.K, l.K/2),
			); err != nil {
				return err
			}
		}
	}
	for _, p := range nt.params {
		if err := e.sgd(p.w, p.g, p.v, p.n, lr, nt.opt.Momentum, nt.opt.WeightDecay, nt.steps == 0); err != nil {
			return err
		}
	}
	nt.steps++
	return nil
}

func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// scoreTrain turns downloaded logits and loss rows into a StepResult, as
// model.Model.TrainStep reports it.
func scoreTrain(logits, rowLoss []float32, labels []int32, n, K int) (model.StepResult, error) {
	var sum float64
	for _, v := range rowLoss[:n] {
		sum += float64(v)
	}
	r := model.StepResult{Loss: sum / float64(n)}
	if math.IsNaN(r.Loss) || math.IsInf(r.Loss, 0) {
		return model.StepResult{}, fmt.Errorf("%w: %v", model.ErrNonFiniteLoss, r.Loss)
	}
	for i := range n {
		if model.Rank(logits[i*K:(i+1)*K], int(labels[i])) == 0 {
			r.Correct++
		}
	}
	return r, nil
}

// scoreEval is model.Model.EvalStep's scoring of the first n rows.
func scoreEval(logits []float32, labels []int32, n, K int) model.EvalResult {
	var r model.EvalResult
	for i := range n {
		row, y := logits[i*K:(i+1)*K], int(labels[i])
		m := float64(row[0])
		for _, v := range row {
			m = max(m, float64(v))
		}
		var s float64
		for _, v := range row {
			s += math.Exp(float64(v) - m)
		}
		r.LossSum += m + math.Log(s) - float64(row[y])
		switch k := model.Rank(row, y); {
		case k == 0:
			r.Top1++
			r.Top5++
		case k < 5:
			r.Top5++
		}
	}
	return r
}

// readParams downloads the weights (or the momentum buffers) by name.
func (nt *net) readParams(momentum bool) ([]model.NamedTensor, error) {
	out := make([]model.NamedTensor, 0, len(nt.params)+1)
	for _, p := range nt.params {
		t := model.NamedTensor{Name: p.name, Shape: slices.Clone(p.shape), Data: make([]float32, p.n)}
		src := p.w
		if momentum {
			t.Name, src = p.name+model.MomentumSuffix, p.v
		}
		if err := nt.e.download(t.Data, src); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if momentum {
		out = append(out, model.NamedTensor{Name: model.StepName, Shape: []int{1}, Data: []float32{float32(nt.steps)}})
	}
	return out, nil
}

// load is model.Model.Load's contract: every parameter with its exact shape,
// optState empty (fresh optimizer) or complete, nothing unknown, and nothing
// changed unless all of it checks out.
func (nt *net) load(params, optState []model.NamedTensor) error {
	want := make([]model.ParamShape, len(nt.params))
	for i, p := range nt.params {
		want[i] = model.ParamShape{Name: p.name, Shape: p.shape}
	}
	st, err := model.CheckState(want, params, optState)
	if err != nil {
		return fmt.Errorf("cudaops: load: %w", err)
	}
	for _, p := range nt.params {
		if err := nt.e.upload(p.w, st.Params[p.name]); err != nil {
			return err
		}
		if st.Momentum != nil {
			err = nt.e.upload(p.v, st.Momentum[p.name])
		} else {
			err = nt.e.zero(p.v, 0, p.n)
		}
		if err != nil {
			return err
		}
	}
	nt.steps = st.Steps
	return nil
}

func (nt *net) numParams() int {
	n := 0
	for _, p := range nt.params {
		n += p.n
	}
	return n
}

// trainStep is one synchronous step: stage, forward, backward and SGD, then
// the scores. The GPU backend runs the same calls, pipelined (backend.go).
func (nt *net) trainStep(x []float32, labels []int32, n int, lr float32) (model.StepResult, error) {
	return nt.step(func() error { return nt.stage(x, labels, n) }, labels, n, lr)
}

// trainStepU8 is trainStep for a uint8 batch, normalized on the engine.
func (nt *net) trainStepU8(x []uint8, labels []int32, n int, lr float32) (model.StepResult, error) {
	return nt.step(func() error { return nt.stageU8(x, labels, n) }, labels, n, lr)
}

func (nt *net) step(stage func() error, labels []int32, n int, lr float32) (model.StepResult, error) {
	if !(lr >= 0) || math.IsInf(float64(lr), 0) {
		return model.StepResult{}, fmt.Errorf("learning rate must be finite and >= 0, got %v", lr)
	}
	if err := first(stage(), nt.forward(), nt.backward(n, lr)); err != nil {
		return model.StepResult{}, err
	}
	B, K := nt.opt.Batch, nt.spec.Classes
	logits, rowLoss := make([]float32, B*K), make([]float32, B)
	if err := first(nt.e.download(logits, nt.logits), nt.e.download(rowLoss, nt.rowLoss)); err != nil {
		return model.StepResult{}, err
	}
	return scoreTrain(logits, rowLoss, labels, n, K)
}

// logitsOf runs the forward pass and returns the first n rows of logits.
func (nt *net) logitsOf(x []float32, labels []int32, n int) ([]float32, error) {
	if labels == nil {
		labels = make([]int32, n)
	}
	return nt.forwardLogits(func() error { return nt.stage(x, labels, n) }, n)
}

// logitsOfU8 is logitsOf for a uint8 batch.
func (nt *net) logitsOfU8(x []uint8, labels []int32, n int) ([]float32, error) {
	if labels == nil {
		labels = make([]int32, n)
	}
	return nt.forwardLogits(func() error { return nt.stageU8(x, labels, n) }, n)
}

func (nt *net) forwardLogits(stage func() error, n int) ([]float32, error) {
	if err := first(stage(), nt.forward()); err != nil {
		return nil, err
	}
	K := nt.spec.Classes
	logits := make([]float32, nt.opt.Batch*K)
	if err := nt.e.download(logits, nt.logits); err != nil {
		return nil, err
	}
	return logits[:n*K], nil
}
