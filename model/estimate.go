package model

import "fmt"

// Memory is an estimate, in bytes, of what a model of a Spec costs on the
// CPU engine before it is built: what New and the first steps allocate.
// The figures are float64 so that absurd shapes (a batch of 10^9, 100000 px
// images) give an absurd number instead of overflowing.
type Memory struct {
	Params      float64 // weights, gradients, momentum, a checkpoint's copy (ResNets: of the weights and the momentum)
	Activations float64 // each block's output and gradient, the input, the max-pool argmax
	Scratch     float64 // per-worker im2col panels and conv outputs, filter-gradient groups, tap tables
	Graph       float64 // gorgonia's nodes and machines, per block
}

// Total is the sum of the parts.
func (m Memory) Total() float64 { return m.Params + m.Activations + m.Scratch + m.Graph }

func (m Memory) String() string {
	return fmt.Sprintf("%s (parameters %s, activations %s, scratch %s, graph %s)",
		Bytes(m.Total()), Bytes(m.Params), Bytes(m.Activations), Bytes(m.Scratch), Bytes(m.Graph))
}

// graphBytesPerBlock is what gorgonia's graph and tape machines hold per
// conv block besides the tensors: measured ~26 KB per block with 100000
// blocks (2.6 GB).
const graphBytesPerBlock = 32 << 10

// EstimateMemory estimates the memory a model of spec costs when trained
// in batches of batch images with up to threads worker goroutines in its
// kernels (GOMAXPROCS), following the CPU engine's allocations
// (cpuops.NewConvBlock: the full-size conv output, its gradient and the im2col
// panel per worker; one tap entry per row of the im2col matrix). It does
// not validate spec; call it on a valid one. The CUDA engine holds about
// the same tensors in device memory.
func EstimateMemory(spec Spec, batch, threads int) Memory {
	if spec.IsResNet() {
		return estimateResNet(spec, batch, threads)
	}
	const f32 = 4
	B := float64(batch)
	workers := float64(max(1, min(batch, threads)))
	var m Memory
	s := float64(spec.InputSize)
	cin := 3.0
	m.Activations = B * 3 * s * s * f32 // the input tensor
	for i, c := range spec.Conv {
		cout, k := float64(c.Channels), float64(c.Kernel)
		params := cout*cin*k*k + cout
		m.Params += 4 * params * f32
		out := s
		if c.Pool {
			out = float64(int(s) / 2)
			m.Activations += B * cout * out * out // argmax, one byte each
		}
		m.Activations += 2 * B * cout * out * out * f32 // output and its gradient
		if i > 0 {
			m.Activations += B * cin * s * s * f32 // the gradient of the block's input
		}
		m.Scratch += workers * (2*cout*s*s + cin*k*k*s*s) * f32 // conv output, its gradient, im2col panel
		m.Scratch += min(B, 8) * params * f32                   // filter-gradient partial sums
		m.Scratch += cin * k * k * 32                           // the tap table: 4 ints per im2col row
		m.Graph += graphBytesPerBlock
		cin, s = cout, out
	}
	head := cin*float64(spec.Classes) + float64(spec.Classes)
	m.Params += 4 * head * f32
	m.Activations += 3 * B * float64(spec.Classes) * f32 // logits, target, their gradient
	return m
}

// estimateResNet follows the ResNets' allocations: per conv, its output
// and its BatchNorm's; per block, the shortcut's gradient; the input
// gradient of a block's first conv and of its downsampling conv, which
// gorgonia's Add sums; the other activation gradients (BatchNorms' and
// max-pool's input gradients, the inner convs') in the two buffers they
// share by liveness (share.go), each as large as the largest of them;
// once, what all convs share (cpuops.Conv2dShared), as large as the
// largest conv needs: its filter-gradient groups, and its packed weights,
// flipped weights (a KxK stride-1 conv's data gradient) and im2col
// scratch per worker.
func estimateResNet(spec Spec, batch, threads int) Memory {
	const f32 = 4
	l, err := spec.layout()
	if err != nil {
		return Memory{}
	}
	B := float64(batch)
	workers := float64(max(1, min(batch, threads)))
	var m Memory
	m.Activations = B * 3 * float64(spec.InputSize*spec.InputSize) * f32
	var groupSums, shared, grad float64
	const noDX, sharedDX = 0, 1
	conv := func(cin, size, cout, k, stride, groups, dx int) int {
		out := convOut(size, k, stride, k/2)
		params := float64(cout * cin / groups * k * k)
		m.Params += (5*params + 6*float64(cout)) * f32 // w, grad, momentum, a checkpoint's copy of w and momentum; BN's
		o, in := B*float64(cout*out*out), B*float64(cin*size*size)
		m.Activations += 2 * o * f32 // the conv's and the BatchNorm's outputs
		grad = max(grad, o)          // the BatchNorm's input gradient
		if dx == sharedDX {
			grad = max(grad, in)
		}
		need := params + workers*float64(cin*k*k*out*out) // packed weights, im2col scratch
		if stride == 1 && k > 1 {
			need += params // the flipped weights of its data gradient
		}
		shared = max(shared, need*f32)
		groupSums = max(groupSums, min(B, 8)*params*f32)
		m.Graph += graphBytesPerBlock
		return out
	}
	size := conv(3, spec.InputSize, l.stemWidth, l.stemKernel, l.stemStride, 1, noDX)
	cin := l.stemWidth
	if l.maxPool {
		grad = max(grad, B*float64(cin*size*size)) // its input gradient
		size = convOut(size, 3, 2, 1)
		m.Activations += 2 * B * float64(cin*size*size) * f32 // output, argmax
	}
	for _, b := range l.residualBlocks() {
		var out int
		if b.bottleneck {
			conv(b.cin, size, b.width, 1, 1, 1, sharedDX)
			out = conv(b.width, size, b.width, 3, b.stride, b.groups, sharedDX) // a ResNeXt's grouped 3x3
			conv(b.width, out, b.cout, 1, 1, 1, sharedDX)
		} else {
			out = conv(b.cin, size, b.cout, 3, b.stride, 1, sharedDX)
			conv(b.cout, out, b.cout, 3, 1, 1, sharedDX)
		}
		if b.downsample {
			conv(b.cin, size, b.cout, 1, b.stride, 1, sharedDX)
		}
		cin, size = b.cout, out
	}
	// The activation gradients share buffers by liveness (share.go): at
	// most four are live at once (a BatchNorm-add's two outputs, the
	// chain's next, a projection's), none larger than the largest.
	m.Activations += 4 * grad * f32
	head := float64(cin*spec.Classes + spec.Classes)
	m.Params += 4 * head * f32
	m.Activations += 3 * B * float64(spec.Classes) * f32
	m.Scratch += groupSums + shared
	return m
}

// Bytes formats a byte count for a person: "41 MiB", "7.3 TiB".
func Bytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if b >= 100 || i == 0 {
		return fmt.Sprintf("%.0f %s", b, units[i])
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
