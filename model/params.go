package model

import (
	"fmt"
	"math"
	"slices"
)

// NamedTensor is a named float32 tensor in row-major order, as in a
// PyTorch state_dict or a safetensors file.
type NamedTensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// StepName is the optimizer-state tensor holding the number of SGD steps
// taken: PyTorch's SGD treats its first step apart (the momentum buffer
// starts as the gradient), so an exact resume needs to know whether it has
// happened. Stored as float32 for the F32-only checkpoint files: exact up to
// 2^24 steps, and only "zero or not" changes the arithmetic.
const StepName = "optimizer.step"

// MomentumSuffix names a parameter's SGD momentum buffer in the optimizer
// state: "conv0.weight" + MomentumSuffix.
const MomentumSuffix = ".momentum_buffer"

// get returns the parameter's values, or src's, in PyTorch's layout.
func (p *param) get(src []float32) []float32 {
	if !p.transposed {
		return slices.Clone(src)
	}
	return transpose(src, p.shape[1], p.shape[0])
}

// set copies v, in PyTorch's layout, into the parameter's values.
func (p *param) set(v []float32) { p.setInto(p.data, v) }

func (p *param) setInto(dst, v []float32) {
	if p.transposed {
		v = transpose(v, p.shape[0], p.shape[1])
	}
	copy(dst, v)
}

// transpose returns the (cols, rows) transpose of a rows x cols matrix.
func transpose(a []float32, rows, cols int) []float32 {
	t := make([]float32, len(a))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			t[c*rows+r] = a[r*cols+c]
		}
	}
	return t
}

// paramTensors returns copies of the parameters, named and laid out as
// PyTorch's state_dict of the equivalent nn.Sequential-like net:
// conv<i>.weight (Cout,Cin,K,K), conv<i>.bias, fc.weight (Classes,C),
// fc.bias. The ResNets' BatchNorm buffers (running_mean, running_var,
// num_batches_tracked) follow their layer's bias, as in torchvision's.
// They are the host copies, as of the last pull or Load.
func (m *Model) paramTensors() []NamedTensor {
	out := make([]NamedTensor, 0, len(m.params)+3*len(m.bns))
	for _, p := range m.params {
		out = append(out, NamedTensor{Name: p.name, Shape: slices.Clone(p.shape), Data: p.get(p.data)})
		if p.bn != nil {
			out = append(out, p.bn.buffers()...)
		}
	}
	return out
}

// State returns copies of the parameters and of the optimizer state, as
// Load takes them: params named and laid out as PyTorch's state_dict
// (conv<i>.weight (Cout,Cin,K,K), conv<i>.bias, fc.weight (Classes,C),
// fc.bias; the ResNets' BatchNorm buffers running_mean, running_var and
// num_batches_tracked after their layer's bias, as in torchvision's), and
// optState each parameter's optimizer slots then the step count
// (optimizerTensors). A device read can fail (the error says so); on the
// CPU it cannot.
func (m *Model) State() (params, optState []NamedTensor, err error) {
	if err := m.pull(); err != nil {
		return nil, nil, fmt.Errorf("model.State: %w", err)
	}
	return m.paramTensors(), m.optimizerTensors(), nil
}

// pull brings the host copies of the weights, the optimizer state and the
// running statistics up to date (Values.Read into them: nothing to copy on
// the CPU, where they are the values' own memory).
func (m *Model) pull() error {
	slots := m.optim.Slots()
	for _, p := range m.params {
		if _, err := m.eng.Read(p.data, p.node.Value()); err != nil {
			return fmt.Errorf("reading %s: %w", p.name, err)
		}
		for i, v := range p.slotV {
			if _, err := m.eng.Read(p.slots[i], v); err != nil {
				return fmt.Errorf("reading %s%s: %w", p.name, slots[i], err)
			}
		}
	}
	for _, b := range m.bns {
		_, err1 := m.eng.Read(b.mean, b.meanV)
		_, err2 := m.eng.Read(b.vari, b.variV)
		if err := cmpErr(err1, err2); err != nil {
			return fmt.Errorf("reading %s's running statistics: %w", b.name, err)
		}
	}
	return nil
}

// push writes the host copies into the engine's values after Load
// (Values.Upload: nothing to copy on the CPU).
func (m *Model) push() error {
	slots := m.optim.Slots()
	for _, p := range m.params {
		if err := m.eng.Upload(p.node.Value(), p.data); err != nil {
			return fmt.Errorf("uploading %s: %w", p.name, err)
		}
		for i, v := range p.slotV {
			if err := m.eng.Upload(v, p.slots[i]); err != nil {
				return fmt.Errorf("uploading %s%s: %w", p.name, slots[i], err)
			}
		}
	}
	for _, b := range m.bns {
		if err := cmpErr(m.eng.Upload(b.meanV, b.mean), m.eng.Upload(b.variV, b.vari)); err != nil {
			return fmt.Errorf("uploading %s's running statistics: %w", b.name, err)
		}
	}
	return nil
}

// Load restores parameters and optimizer state as State returns them (or
// as read back from a checkpoint). Every parameter must be
// present with its exact shape. An empty optState loads weights only and
// resets the optimizer to its fresh state; a non-empty one must be
// complete. Unknown tensors are rejected, as PyTorch's strict
// load_state_dict does. Nothing changes unless everything checks out.
func (m *Model) Load(params, optState []NamedTensor) error {
	want := make([]ParamShape, len(m.params))
	for i, p := range m.params {
		want[i] = ParamShape{Name: p.name, Shape: p.shape}
	}
	params, bufs, err := m.splitBuffers(params)
	if err != nil {
		return fmt.Errorf("model.Load: %w", err)
	}
	slots := m.optim.Slots()
	ps, os, steps, err := checkState(want, slots, params, optState)
	if err != nil {
		return fmt.Errorf("model.Load: %w", err)
	}
	m.loadBuffers(bufs)
	for _, p := range m.params {
		p.set(ps[p.name].Data)
		for i, suf := range slots {
			if os == nil {
				clear(p.slots[i])
			} else {
				p.setInto(p.slots[i], os[p.name+suf].Data)
			}
		}
	}
	m.steps = steps
	if err := m.push(); err != nil {
		return fmt.Errorf("model.Load: %w", err)
	}
	return nil
}

// ParamShape names one trainable tensor and its shape.
type ParamShape struct {
	Name  string
	Shape []int
}

// State is a checked state dict, by parameter name.
type State struct {
	Params   map[string][]float32
	Momentum map[string][]float32 // nil when no optimizer state was given
	Steps    int64
}

// CheckState checks params and optState (as State returns them for SGD, or
// as read from a checkpoint) against the parameters a
// network has: every parameter present with its exact shape; optState empty
// (a fresh optimizer) or complete, with a whole step count; nothing unknown,
// as PyTorch's strict load_state_dict. Errors name the tensor.
func CheckState(want []ParamShape, params, optState []NamedTensor) (State, error) {
	ps, os, steps, err := checkState(want, []string{MomentumSuffix}, params, optState)
	if err != nil {
		return State{}, err
	}
	st := State{Params: map[string][]float32{}, Steps: steps}
	if os != nil {
		st.Momentum = map[string][]float32{}
	}
	for _, p := range want {
		st.Params[p.Name] = ps[p.Name].Data
		if os != nil {
			st.Momentum[p.Name] = os[p.Name+MomentumSuffix].Data
		}
	}
	return st, nil
}

// checkState is the one check of a state dict, for any optimizer: params
// and optState indexed by name, optState's nil when empty (a fresh
// optimizer), or else complete: each parameter's slots (Optimizer.Slots)
// and the step count. Every Load starts here, so all backends accept and
// refuse the same files.
func checkState(want []ParamShape, slots []string, params, optState []NamedTensor) (ps, os map[string]NamedTensor, steps int64, err error) {
	if ps, err = index(params, "params"); err != nil {
		return nil, nil, 0, err
	}
	if os, err = index(optState, "optimizer state"); err != nil {
		return nil, nil, 0, err
	}
	if len(optState) == 0 {
		os = nil
	}
	known := map[string]bool{}
	for _, p := range want {
		if err := check(ps, p.Name, p.Shape); err != nil {
			return nil, nil, 0, err
		}
		known[p.Name] = true
		if os == nil {
			continue
		}
		for _, suf := range slots {
			if err := check(os, p.Name+suf, p.Shape); err != nil {
				return nil, nil, 0, err
			}
			known[p.Name+suf] = true
		}
	}
	if os != nil {
		if err := check(os, StepName, []int{1}); err != nil {
			return nil, nil, 0, err
		}
		if steps, err = wholeCount(StepName, os[StepName].Data[0]); err != nil {
			return nil, nil, 0, err
		}
		known[StepName] = true
	}
	for _, idx := range []map[string]NamedTensor{ps, os} {
		if name := unknown(idx, known); name != "" {
			what := "params"
			if _, ok := os[name]; ok {
				what = "optimizer state"
			}
			return nil, nil, 0, fmt.Errorf("unexpected tensor %q in %s", name, what)
		}
	}
	return ps, os, steps, nil
}

// wholeCount reads a count stored as a float32 (the step count,
// num_batches_tracked): a whole number >= 0.
func wholeCount(name string, v float32) (int64, error) {
	s := float64(v)
	if s < 0 || s != math.Trunc(s) || math.IsInf(s, 0) {
		return 0, fmt.Errorf("%s = %v, want a whole number >= 0", name, s)
	}
	return int64(s), nil
}

// unknown names, in sorted order, the first tensor of idx not in known.
func unknown(idx map[string]NamedTensor, known map[string]bool) string {
	var names []string
	for name := range idx {
		if !known[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

func index(ts []NamedTensor, what string) (map[string]NamedTensor, error) {
	idx := make(map[string]NamedTensor, len(ts))
	for _, t := range ts {
		if _, dup := idx[t.Name]; dup {
			return nil, fmt.Errorf("tensor %q appears twice in %s", t.Name, what)
		}
		idx[t.Name] = t
	}
	return idx, nil
}

func check(idx map[string]NamedTensor, name string, shape []int) error {
	t, ok := idx[name]
	if !ok {
		return fmt.Errorf("missing tensor %q", name)
	}
	if !slices.Equal(t.Shape, shape) {
		return fmt.Errorf("tensor %q has shape %v, want %v", name, t.Shape, shape)
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	if len(t.Data) != n {
		return fmt.Errorf("tensor %q has %d values for shape %v, want %d", name, len(t.Data), shape, n)
	}
	return nil
}
