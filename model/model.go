package model

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"stoke/gemm"
)

// ErrNonFiniteLoss is returned (wrapped) by a training step whose loss is NaN
// or infinite: the learning rate is too high for the data, or the data holds
// non-finite values.
var ErrNonFiniteLoss = errors.New("the loss is not finite")

// Options are the training settings fixed when the graph is built.
type Options struct {
	Batch       int     // B: the graph's fixed batch size
	Seed        uint64  // seeds the initial weights
	Momentum    float32 // SGD momentum (0: plain SGD)
	WeightDecay float32 // L2 penalty added to every parameter's gradient (AdamW: decoupled)

	// The rest is off at its zero value, which is the original SGD.
	Optimizer          string  // "" or OptimizerSGD, or OptimizerAdamW
	Nesterov           bool    // SGD: Nesterov momentum
	Beta1, Beta2, Eps  float32 // AdamW; all three 0: PyTorch's defaults (0.9, 0.999, 1e-8)
	NoDecayNormAndBias bool    // no weight decay on BatchNorm parameters and biases
	LabelSmoothing     float32 // CrossEntropyLoss(label_smoothing=…), in [0, 1)
	// ZeroInitResidual is torchvision's zero_init_residual: each residual
	// block's last BatchNorm weight (a BasicBlock's bn2, a Bottleneck's
	// bn3) starts at 0, so that the block starts as its shortcut. The cnn
	// has no such layer and ignores it.
	ZeroInitResidual bool

	// Precision is what the conv and linear layers' GEMMs round their
	// inputs to (gemm.Precision: fp32, tf32, bf16), summing in float32;
	// BatchNorm, the loss, the optimizer and the weights stay float32. The
	// engine must run at it (Engine.Precision; New's CPU engine does).
	Precision gemm.Precision

	// Winograd makes New's CPU engine compute its 3x3 stride-1 convs by
	// Winograd's F(2x2, 3x3) where that pays (CPUWinograd): fp32 only,
	// the same sums with a different float rounding. Other engines ignore
	// it.
	Winograd bool

	// Mean and Std normalize a uint8 batch (Input.U8, values round(255·v)):
	// (v/255 − mean)/std per channel, as augment.NormalizeU8 does. Zero Std:
	// Start and Eval refuse uint8 batches.
	Mean, Std [3]float32
}

// StepResult is what one training step reports.
type StepResult struct {
	Loss    float64 // mean cross-entropy over the n valid samples
	Correct int     // top-1 hits among the n valid samples
	// Deferred is set when the step's figures are still on the device:
	// Loss and Correct are then zero, and the backend's Results (Deferred)
	// reports them, in step order, with the step's times and its error (a
	// non-finite loss) once it is read.
	Deferred bool
}

// EvalResult is what one evaluation batch reports; sums, so that batches of
// different sizes add up.
type EvalResult struct {
	LossSum float64 // summed cross-entropy over the n valid samples
	Top1    int
	Top5    int // label within the 5 highest logits (every sample when Classes < 5)
	// Pred is the top-1 class of each of the n valid rows (argmax, ties to
	// the lower index), for per-class accuracy; nil from a backend that
	// does not report it.
	Pred []int32
}

// param is one trainable tensor. data backs the graph node's value, so the
// optimizer updates the weights in place; mom is its momentum buffer.
type param struct {
	name  string
	shape []int // PyTorch's layout (what Params reports)
	// transposed is set for fc.weight, held as (C, Classes) inside the graph
	// so that the head is a plain h·W; PyTorch's nn.Linear keeps (Classes, C).
	transposed bool
	fanIn      int
	node       *G.Node
	grad       *G.Node
	data       []float32
	noDecay    bool     // a BatchNorm parameter or a bias
	bn         *bnLayer // set on a BatchNorm's bias: its buffers follow it in the state dict
	hooked     bool     // its gradient op hands it to the GradSync (hookGradients)
	// slots are the optimizer's state (Optimizer.Slots: SGD's momentum
	// buffer; AdamW's exp_avg, exp_avg_sq), in the graph's layout; slotV
	// their engine values (Values.ValueOf: on the host, the slices
	// themselves; on a device, device copies, and slots are then host
	// copies, as data is, brought up to date by State).
	slots [][]float32
	slotV []G.Value
}

// Model is a network (the cnn or a ResNet) built as one gorgonia graph with
// a fixed batch size, and its optimizer's state. A Model is not safe for
// concurrent use.
type Model struct {
	spec Spec
	opt  Options

	g       *G.ExprGraph
	train   G.VM // forward, backward: every node
	forward G.VM // the subgraph that computes the logits
	x       []float32
	target  []float32
	logits  *G.Node
	loss    *G.Node
	params  []*param
	optim   Optimizer // Options.optimizer, chosen once
	steps   int64     // optimizer steps taken; the first one seeds momentum
	closed  bool
	sync    GradSync    // between backward and update (data parallel); nil = none
	grads   [][]float32 // with sync: each gradient on the host (Values.Read), as handed over

	bns  []*bnLayer // the ResNets' BatchNorms, in state_dict order
	mode bnMode

	eng         Engine        // runs the ops; CPUEngine unless NewOn was given another
	xV, targetV *tensor.Dense // the inputs' values, over x and target (Values.ValueOf)
	xNode       *G.Node
	xBound      G.Value     // the value xNode is bound to: xV, or a caller's (Input.Value)
	logitsBuf   []float32   // where Values.Read puts the logits when they are not host memory
	shared      [][]float32 // the buffers activation gradients share (share.go)
}

// buildMu serialises graph construction: gorgonia's builders share
// package-level constant nodes (the gradient seed, ReLU's zero) and cache
// their hashes lazily, which races when two graphs are built at once.
var buildMu sync.Mutex

// New validates spec and opt, initialises the weights from opt.Seed as
// PyTorch does by default, and builds the training and forward machines.
func New(spec Spec, opt Options) (*Model, error) {
	return NewOn(CPUEngine(CPUPrecision(opt.Precision), CPUWinograd(opt.Winograd)), spec, opt)
}

// NewOn is New with the graph's values and ops on eng: the same graph, the
// same initial weights, on another device (cudaops's engine), for every
// arch and optimizer.
func NewOn(eng Engine, spec Spec, opt Options) (*Model, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if opt.Batch < 1 {
		return nil, fmt.Errorf("model.options.batch: must be >= 1, got %d", opt.Batch)
	}
	if !(opt.Momentum >= 0) || math.IsInf(float64(opt.Momentum), 0) {
		return nil, fmt.Errorf("model.options.momentum: must be >= 0, got %v", opt.Momentum)
	}
	if !(opt.WeightDecay >= 0) || math.IsInf(float64(opt.WeightDecay), 0) {
		return nil, fmt.Errorf("model.options.weight_decay: must be >= 0, got %v", opt.WeightDecay)
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	if eng.Precision != opt.Precision {
		return nil, fmt.Errorf("model.options.precision: %v, but the engine runs its GEMMs at %v", opt.Precision, eng.Precision)
	}
	m := &Model{spec: spec, opt: opt, optim: opt.optimizer(), eng: eng}
	var err error
	buildMu.Lock()
	err = m.build()
	buildMu.Unlock()
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("model: building the graph: %w", err)
	}
	return m, nil
}

// build makes the graph, every node an op of ours (ops.go) but the cnn's
// skip adds (gorgonia's Add):
//
//	x (B,3,S,S) → the arch's layers (layers.go: cnn, resnet) →
//	GlobalAvgPool (B,C) → Linear ·W + b → logits (B,K)
//	loss = SoftmaxCrossEntropy(logits, target)
//
// then the gradients and the two machines, and the activation gradients'
// buffers shared by liveness (share.go). gorgonia's GlobalAveragePool2D
// has no gradient and its AveragePool2D and two-axis Mean are wrong
// (docs/gorgonia.md); its Conv2d and MaxPool2D are correct but slow
// (transposes, fresh buffers each run).
func (m *Model) build() error {
	m.g = G.NewGraph()
	x, target, err := m.inputNodes()
	if err != nil {
		return err
	}
	b := newBuilder(m)
	var h *G.Node
	if m.spec.IsResNet() {
		var l resnetLayout
		if l, err = m.spec.layout(); err == nil {
			h, err = resnet(b, l, x)
		}
	} else {
		h, err = cnn(b, m.spec, x)
	}
	if err != nil {
		return err
	}
	if err := head(b, h, target, m.spec.Classes); err != nil {
		return err
	}
	if b.ops.err != nil {
		return b.ops.err
	}
	if err := m.distinctInputs(x, target); err != nil {
		return err
	}
	if err := m.gradients(); err != nil {
		return err
	}
	if b.ops.err != nil { // the gradient ops' values
		return b.ops.err
	}
	if err := m.compile(); err != nil {
		return err
	}
	return m.shareGradients(b.ops)
}

// inputNodes makes the batch's and the target's buffers, their values
// (Values.ValueOf) and their nodes.
func (m *Model) inputNodes() (x, target *G.Node, err error) {
	B, S, K := m.opt.Batch, m.spec.InputSize, m.spec.Classes
	m.x = make([]float32, B*3*S*S)
	m.target = make([]float32, B*K)
	if m.xV, err = m.value(m.x, B, 3, S, S); err != nil {
		return nil, nil, err
	}
	if m.targetV, err = m.value(m.target, B, K); err != nil {
		return nil, nil, err
	}
	m.logitsBuf = make([]float32, B*K)
	x = G.NewTensor(m.g, tensor.Float32, 4, G.WithShape(B, 3, S, S), G.WithName("x"), G.WithValue(m.xV))
	m.xNode, m.xBound = x, m.xV
	target = G.NewMatrix(m.g, tensor.Float32, G.WithShape(B, K), G.WithName("target"), G.WithValue(m.targetV))
	return x, target, nil
}

// distinctInputs checks that no two of the graph's inputs became one node:
// gorgonia hash-conses nodes and tells inputs apart by name alone, so two
// inputs sharing a name would silently merge. Names are unique here;
// check that the graph agrees.
func (m *Model) distinctInputs(x, target *G.Node) error {
	seen := map[*G.Node]bool{x: true, target: true}
	for _, p := range m.params {
		if seen[p.node] {
			return fmt.Errorf("input %s aliases another input node", p.name)
		}
		seen[p.node] = true
	}
	return nil
}

// gradients adds the backward pass: each parameter's gradient node.
func (m *Model) gradients() error {
	wrt := make(G.Nodes, len(m.params))
	for i, p := range m.params {
		wrt[i] = p.node
	}
	grads, err := G.Grad(m.loss, wrt...)
	if err != nil {
		return fmt.Errorf("gradients: %w", err)
	}
	for i, p := range m.params {
		p.grad = grads[i]
		if got := grads[i].Shape().TotalSize(); got != len(p.data) {
			return fmt.Errorf("gradient of %s has %d elements, want %d", p.name, got, len(p.data))
		}
	}
	return nil
}

// compile makes the training machine (every node) and the forward one
// (the logits' subgraph), and hooks the gradients to the GradSync.
func (m *Model) compile() (err error) {
	// NewTapeMachine panics on a compile error; turn that into an error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("compiling: %v", r)
		}
	}()
	// gorgonia's own ops (the Add that Backpropagate inserts where a node
	// has two consumers) compute through the machine's tensor engine: a
	// device engine supplies one that works on its values.
	var vmOpts []G.VMOpt
	if te := m.eng.TensorEngine(); te != nil {
		vmOpts = append(vmOpts, G.WithEngine(te))
	}
	m.train = G.NewTapeMachine(m.g, vmOpts...)
	m.forward = G.NewTapeMachine(m.g.SubgraphRoots(m.logits), vmOpts...)
	m.hookGradients()
	return nil
}

// trainStep runs forward, backward and one optimizer step on a batch (X or
// Value: hostInput has normalized a U8 one) whose first N rows are valid.
// Padded rows add nothing to the loss or the gradients. On error the
// weights are unchanged.
func (m *Model) trainStep(in Input, lr float32) (StepResult, error) {
	if !(lr >= 0) || math.IsInf(float64(lr), 0) {
		return StepResult{}, fmt.Errorf("model.TrainStep: learning rate must be finite and >= 0, got %v", lr)
	}
	if m.sync != nil {
		return m.trainStepSync(in, lr)
	}
	if m.scored() {
		return m.trainStepScored(in, lr)
	}
	loss, logits, err := m.backward(in)
	if err != nil {
		return StepResult{}, fmt.Errorf("model.TrainStep: %w", err)
	}
	return m.finishStep(loss, logits, in.Labels, in.N, lr)
}

// scored reports whether the engine scores this step on its device
// (StepScorer).
func (m *Model) scored() bool {
	sc, ok := m.eng.Values.(StepScorer)
	return ok && sc.ScoresSteps()
}

// trainStepScored is trainStep on an engine that scores the step itself
// (StepScorer): the same graph and update, with the loss, the hits and the
// non-finite check left on the device, so that nothing here waits for it.
// Its result is Deferred.
func (m *Model) trainStepScored(in Input, lr float32) (StepResult, error) {
	if in.Labels == nil {
		return StepResult{}, errors.New("model.TrainStep: labels are missing")
	}
	if err := m.loadInput(in); err != nil {
		return StepResult{}, fmt.Errorf("model.TrainStep: %w", err)
	}
	m.mode = bnMode{training: true, n: in.N}
	err := m.stageBN()
	if err == nil {
		err = run(m.train)
	}
	if err == nil {
		err = m.commitBN()
	}
	if err == nil {
		err = m.update(lr)
	}
	if err != nil {
		return StepResult{}, fmt.Errorf("model.TrainStep: %w", err)
	}
	m.steps++
	return StepResult{Deferred: true}, nil
}

// finishStep ends a training step whose backward has run: it keeps the
// BatchNorm running statistics staged by this rank's samples (none when
// n = 0), applies the update from the gradient values and scores the n
// valid rows.
func (m *Model) finishStep(loss float32, logits []float32, labels []int32, n int, lr float32) (StepResult, error) {
	if n > 0 {
		if err := m.commitBN(); err != nil {
			return StepResult{}, fmt.Errorf("model.TrainStep: %w", err)
		}
	}
	if err := m.update(lr); err != nil {
		return StepResult{}, fmt.Errorf("model.TrainStep: %w", err)
	}
	m.steps++
	r := StepResult{Loss: float64(loss)}
	K := m.spec.Classes
	for i := 0; i < n; i++ {
		if Rank(logits[i*K:(i+1)*K], int(labels[i])) == 0 {
			r.Correct++
		}
	}
	return r, nil
}

// backward runs the training machine on a batch and returns the loss and
// the logits, which are valid until the next run; the gradients are left
// in their nodes' values, for the update.
func (m *Model) backward(in Input) (loss float32, logits []float32, err error) {
	if in.Labels == nil {
		return 0, nil, errors.New("labels are missing")
	}
	if err := m.loadInput(in); err != nil {
		return 0, nil, err
	}
	m.mode = bnMode{training: true, n: in.N}
	if err := m.stageBN(); err != nil {
		return 0, nil, err
	}
	if err := run(m.train); err != nil {
		return 0, nil, err
	}
	if loss, err = scalarF32(m.loss.Value()); err != nil {
		return 0, nil, fmt.Errorf("reading the loss: %w", err)
	}
	if math.IsNaN(float64(loss)) || math.IsInf(float64(loss), 0) {
		return 0, nil, fmt.Errorf("%w: %v; parameters not updated", ErrNonFiniteLoss, loss)
	}
	if logits, err = m.logitsData(); err != nil {
		return 0, nil, err
	}
	return loss, logits, nil
}

// evalStep runs the forward pass only and scores the first N rows.
func (m *Model) evalStep(in Input) (EvalResult, error) {
	if in.Labels == nil {
		return EvalResult{}, errors.New("model.EvalStep: labels are missing")
	}
	logits, err := m.runForward(in)
	if err != nil {
		return EvalResult{}, fmt.Errorf("model.EvalStep: %w", err)
	}
	var r EvalResult
	K, n, labels := m.spec.Classes, in.N, in.Labels
	r.Pred = make([]int32, n)
	for i := 0; i < n; i++ {
		row, y := logits[i*K:(i+1)*K], int(labels[i])
		for j, v := range row {
			if v > row[r.Pred[i]] {
				r.Pred[i] = int32(j)
			}
		}
		r.LossSum += logSumExp(row) - float64(row[y])
		switch k := Rank(row, y); {
		case k == 0:
			r.Top1++
			r.Top5++
		case k < 5:
			r.Top5++
		}
	}
	return r, nil
}

func (m *Model) runForward(in Input) ([]float32, error) {
	if err := m.loadInput(in); err != nil {
		return nil, err
	}
	m.mode = bnMode{training: false, n: in.N}
	if err := run(m.forward); err != nil {
		return nil, err
	}
	return m.logitsData()
}

// logitsData is the last run's logits on the host (Values.Read).
func (m *Model) logitsData() ([]float32, error) {
	l, err := m.eng.Read(m.logitsBuf, m.logits.Value())
	if err != nil {
		return nil, fmt.Errorf("reading the logits: %w", err)
	}
	return l, nil
}

// value makes a float32 value of shape holding data (Values.ValueOf).
func (m *Model) value(data []float32, shape ...int) (*tensor.Dense, error) {
	return m.eng.ValueOf(data, tensor.Shape(shape))
}

// loadInput checks a batch and puts it into the graph's inputs: the first
// N rows of in.X (the rest zeroed, so that stale or non-finite padding
// cannot leak into the gradients as 0·NaN), or in.Value, a value of the
// engine's already holding the batch (padding zeroed), bound to the input
// node; and the weighted one-hot target. in.Labels may be nil (Logits):
// the target is then left as zero.
func (m *Model) loadInput(in Input) error {
	x, xv, labels, n := in.X, in.Value, in.Labels, in.N
	if m.closed {
		return errors.New("model is closed")
	}
	B, K := m.opt.Batch, m.spec.Classes
	if n < 1 || n > B {
		return fmt.Errorf("n = %d valid samples, want 1..%d (the batch size)", n, B)
	}
	bind := G.Value(m.xV)
	if xv != nil {
		if !xv.Shape().Eq(m.xNode.Shape()) {
			return fmt.Errorf("input value of shape %v, want %v", xv.Shape(), m.xNode.Shape())
		}
		bind = xv
	} else if len(x) != len(m.x) {
		return fmt.Errorf("x has %d floats, want %d (B=%d x 3 x %d x %d)", len(x), len(m.x), B, m.spec.InputSize, m.spec.InputSize)
	}
	clear(m.target)
	if labels != nil {
		if len(labels) < n {
			return fmt.Errorf("%d labels for n = %d valid samples", len(labels), n)
		}
		for i, y := range labels[:n] {
			if y < 0 || int(y) >= K {
				return fmt.Errorf("labels[%d] = %d, want 0..%d", i, y, K-1)
			}
		}
		if eps := m.opt.LabelSmoothing; eps != 0 {
			// CrossEntropyLoss(label_smoothing=ε): the target is
			// (1−ε)·onehot + ε/K, so the loss is (1−ε)·NLL + ε·mean_k(−log p_k).
			off := eps / float32(K) / float32(n)
			on := (1-eps)/float32(n) + off
			for i, y := range labels[:n] {
				row := m.target[i*K : (i+1)*K]
				for j := range row {
					row[j] = off
				}
				row[y] = on
			}
		} else {
			for i, y := range labels[:n] {
				m.target[i*K+int(y)] = 1 / float32(n)
			}
		}
	}
	if bind != m.xBound {
		if err := G.Let(m.xNode, bind); err != nil {
			return fmt.Errorf("binding the input: %w", err)
		}
		m.xBound = bind
	}
	if xv == nil {
		per := len(m.x) / B
		copy(m.x, x[:n*per])
		clear(m.x[n*per:])
	}
	if xv == nil {
		if err := m.eng.Upload(m.xV, m.x); err != nil {
			return fmt.Errorf("uploading the batch: %w", err)
		}
	}
	if m.scored() { // the engine builds the target from the labels itself
		return nil
	}
	if err := m.eng.Upload(m.targetV, m.target); err != nil {
		return fmt.Errorf("uploading the target: %w", err)
	}
	return nil
}

// run executes one pass of a machine. gorgonia reports some failures by
// panicking; they become errors here.
func run(vm G.VM) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("gorgonia panicked: %v", r)
		}
	}()
	defer vm.Reset()
	if err := vm.RunAll(); err != nil {
		return fmt.Errorf("running the graph: %w", err)
	}
	return nil
}

// Rank is how many classes score above label y in a row of logits, ties
// counting for the lower index as argmax does: 0 means a top-1 hit, < 5 a
// top-5 hit. Every backend counts hits by it.
func Rank(row []float32, y int) int {
	r := 0
	for j, v := range row {
		if v > row[y] || (v == row[y] && j < y) {
			r++
		}
	}
	return r
}

// NumParams is the number of trainable scalars.
func (m *Model) NumParams() int {
	n := 0
	for _, p := range m.params {
		n += len(p.data)
	}
	return n
}

// Spec returns the spec the model was built from.
func (m *Model) Spec() Spec { return m.spec }

// Options returns the options the model was built with.
func (m *Model) Options() Options { return m.opt }

// Close releases the machines. gorgonia sets a finalizer on each tape
// machine that keeps it, and the whole graph with it, alive forever; it is
// removed here so the model can be collected (docs/gorgonia.md). Close is
// idempotent; the model cannot be used afterwards.
func (m *Model) Close() {
	m.closed = true
	for _, vm := range []G.VM{m.train, m.forward} {
		if vm != nil {
			vm.Close()
			runtime.SetFinalizer(vm, nil)
		}
	}
	m.train, m.forward = nil, nil
}
