package cpuops

import (
	"stoke/gemm"

	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// The ResNets' layers at the shapes of `train bench-step` (resnet20 at
// 32 px, batch 128; resnet18 with the cifar stem at 32 px, batch 64), one
// op per benchmark, with GFLOPS for the convolutions and GB/s (bytes the
// op must read and write at least) for BatchNorm, both from the wall
// clock, and the process's CPU time per op (cpu-ms/op, steadier than the
// wall clock on a shared machine). On one core:
//
//	go test -run - -bench 'Conv2d|BatchNorm' -cpu 1 ./cpuops/

var benchConvs = []struct {
	name                     string
	B, Cin, H, Cout, K, S, P int
}{
	{"r20-s1-16x32x32", 128, 16, 32, 16, 3, 1, 1},
	{"r20-s2-32x16x16", 128, 32, 16, 32, 3, 1, 1},
	{"r20-s3-64x8x8", 128, 64, 8, 64, 3, 1, 1},
	{"r20-down-16to32-s2", 128, 16, 32, 32, 3, 2, 1},
	{"r20-1x1-16to32-s2", 128, 16, 32, 32, 1, 2, 0},
	{"r18-s1-64x32x32", 64, 64, 32, 64, 3, 1, 1},
	{"r18-s2-128x16x16", 64, 128, 16, 128, 3, 1, 1},
	{"x-256x16x16", 64, 256, 16, 256, 3, 1, 1},
	{"r18-s3-256x8x8", 64, 256, 8, 256, 3, 1, 1},
	{"r18-s4-512x4x4", 64, 512, 4, 512, 3, 1, 1},
	{"r18i-stem-224", 16, 3, 224, 64, 7, 2, 3},
	{"r18i-s2-128x28x28", 16, 128, 28, 128, 3, 1, 1},
	{"r18i-s3-256x14x14", 16, 256, 14, 256, 3, 1, 1},
	{"r18i-down-128to256-s2", 16, 128, 28, 256, 3, 2, 1},
	{"r18i-s4-512x7x7", 16, 512, 7, 512, 3, 1, 1},
	{"r50-s4-512x7x7", 4, 512, 7, 512, 3, 1, 1},
	{"r50-s4-1x1-512to2048", 4, 512, 7, 2048, 1, 1, 0},
	{"r50-s4-1x1-2048to512", 4, 2048, 7, 512, 1, 1, 0},
	{"r50-s4-down-512x14-s2", 4, 512, 14, 512, 3, 2, 1},
	{"r50-s4-1x1-down-1024x14-s2", 4, 1024, 14, 2048, 1, 2, 0},
	{"r50-s3-256x14x14", 4, 256, 14, 256, 3, 1, 1},
}

func BenchmarkConv2d(b *testing.B) {
	for _, s := range benchConvs {
		c, err := NewConv2d(s.B, s.Cin, s.H, s.H, s.Cout, s.K, s.S, s.P, 1)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 1))
		x, w := randF32(rng, c.InLen()), randF32(rng, s.Cout*s.Cin*s.K*s.K)
		y, dy := make([]float32, c.OutLen()), randF32(rng, c.OutLen())
		dx, dw := make([]float32, len(x)), make([]float32, len(w))
		flop := 2 * float64(s.B*s.Cout*c.Ho*c.Wo*s.Cin*s.K*s.K)
		for _, pass := range []struct {
			name string
			run  func()
		}{
			{"fwd", func() { c.Forward(x, w, y) }},
			{"dx", func() { c.BackwardData(w, dy, dx) }},
			{"dw", func() { c.BackwardFilter(x, dy, dw) }},
			{"fwd-wino", func() { // Winograd's F(2x2, 3x3) where it applies
				defer c.SetWinograd(false)
				c.setWinograd(true, true)
				c.Forward(x, w, y)
			}},
			{"dx-wino", func() {
				defer c.SetWinograd(false)
				c.setWinograd(true, true)
				c.BackwardData(w, dy, dx)
			}},
			{"dw-wino", func() {
				defer c.SetWinograd(false)
				c.setWinograd(true, true)
				c.BackwardFilter(x, dy, dw)
			}},
			{"dw-gemm", func() { // the GEMM where dw takes the direct kernels
				defer func(u bool) { useFilterDirect = u }(useFilterDirect)
				useFilterDirect = false
				c.BackwardFilter(x, dy, dw)
			}},
			{"dw-bf16", func() { // at bf16: the VDPBF16PS direct kernels where they apply (filterBF16), else its GEMM
				defer c.SetPrecision(gemm.FP32)
				c.SetPrecision(gemm.BF16)
				c.BackwardFilter(x, dy, dw)
			}},
			{"dw-bf16-gemm", func() {
				defer c.SetPrecision(gemm.FP32)
				defer func(u bool) { useFilterDirect = u }(useFilterDirect)
				useFilterDirect = false
				c.SetPrecision(gemm.BF16)
				c.BackwardFilter(x, dy, dw)
			}},
		} {
			if len(pass.name) > 7 && pass.name[:7] == "dw-bf16" && !gemm.FastBF16() {
				continue
			}
			if pass.name == "dw-gemm" && !c.filterDirect() || len(pass.name) > 5 && pass.name[len(pass.name)-5:] == "-wino" && !c.WinogradApplies() {
				continue
			}
			b.Run(s.name+"/"+pass.name, func(b *testing.B) {
				pass.run()
				b.ResetTimer()
				t0 := cpuTime()
				for i := 0; i < b.N; i++ {
					pass.run()
				}
				reportCPU(b, t0)
				b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
			})
		}
	}
}

func BenchmarkBatchNorm(b *testing.B) {
	for _, s := range []struct{ B, C, HW int }{{128, 16, 1024}, {128, 64, 64}, {64, 64, 1024}, {16, 64, 3136}} {
		for _, relu := range []bool{false, true} {
			bn, err := NewBatchNorm(s.B, s.C, s.HW, relu)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(2, 2))
			x, dy := randF32(rng, bn.Len()), randF32(rng, bn.Len())
			gamma, beta := randF32(rng, s.C), randF32(rng, s.C)
			rm, rv := make([]float32, s.C), make([]float32, s.C)
			for i := range rv {
				rv[i] = 1
			}
			y, dx := make([]float32, bn.Len()), make([]float32, bn.Len())
			dg, db := make([]float32, s.C), make([]float32, s.C)
			name := fmt.Sprintf("%dx%dx%d-relu=%v", s.B, s.C, s.HW, relu)
			bytes := 4 * float64(bn.Len())
			b.Run(name+"/fwd", func(b *testing.B) {
				t0 := cpuTime()
				for i := 0; i < b.N; i++ {
					bn.Forward(x, gamma, beta, y, rm, rv, s.B, true)
				}
				reportCPU(b, t0)
				b.ReportMetric(2*bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
			b.Run(name+"/bwd", func(b *testing.B) {
				bn.Forward(x, gamma, beta, y, rm, rv, s.B, true)
				b.ResetTimer()
				t0 := cpuTime()
				for i := 0; i < b.N; i++ {
					bn.Backward(x, gamma, y, dy, dx, dg, db)
				}
				reportCPU(b, t0)
				b.ReportMetric(4*bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

func reportCPU(b *testing.B, t0 time.Duration) {
	b.ReportMetric(float64(cpuTime()-t0)/1e6/float64(b.N), "cpu-ms/op")
}

// BenchmarkBasicBlockEnd: a BasicBlock's end, ReLU(bn2(x) + shortcut),
// forward and backward, as one op (fused: NewBatchNormAddReLU) and as the
// three it replaces (unfused: BatchNorm, AddReLU; ReLUBackward, BatchNorm's
// backward), at resnet20's and resnet18's first-stage shapes, resnet18's
// last and resnet50's stages 2 to 4 at batch 4 (224 px):
//
//	go test -run - -bench BasicBlockEnd -cpu 1 ./cpuops/
func BenchmarkBasicBlockEnd(b *testing.B) {
	for _, s := range []struct{ B, C, HW int }{{128, 16, 1024}, {128, 32, 256}, {128, 64, 64}, {64, 64, 1024}, {64, 512, 16}, {4, 512, 784}, {4, 1024, 196}, {4, 2048, 49}} {
		fused, _ := NewBatchNormAddReLU(s.B, s.C, s.HW)
		plain, _ := NewBatchNorm(s.B, s.C, s.HW, false)
		rng := rand.New(rand.NewPCG(3, 3))
		N := fused.Len()
		x, sc, dy := randF32(rng, N), randF32(rng, N), randF32(rng, N)
		gamma, beta := randF32(rng, s.C), randF32(rng, s.C)
		rm, rv := make([]float32, s.C), make([]float32, s.C)
		for i := range rv {
			rv[i] = 1
		}
		bnOut, y, d, ds, dx := make([]float32, N), make([]float32, N), make([]float32, N), make([]float32, N), make([]float32, N)
		dg, db := make([]float32, s.C), make([]float32, s.C)
		name := fmt.Sprintf("%dx%dx%d", s.B, s.C, s.HW)
		for _, v := range []struct {
			name     string
			fwd, bwd func()
		}{
			{"fused", func() { fused.ForwardAdd(x, gamma, beta, sc, y, rm, rv, s.B, true) },
				func() { fused.BackwardAdd(x, gamma, y, dy, dx, ds, dg, db) }},
			{"unfused", func() { plain.Forward(x, gamma, beta, bnOut, rm, rv, s.B, true); AddReLU(bnOut, sc, y) },
				func() { ReLUBackward(y, dy, d); plain.Backward(x, gamma, y, d, dx, dg, db) }},
		} {
			b.Run(name+"/"+v.name+"/fwd", func(b *testing.B) {
				t0 := cpuTime()
				for i := 0; i < b.N; i++ {
					v.fwd()
				}
				reportCPU(b, t0)
			})
			b.Run(name+"/"+v.name+"/bwd", func(b *testing.B) {
				v.fwd()
				b.ResetTimer()
				t0 := cpuTime()
				for i := 0; i < b.N; i++ {
					v.bwd()
				}
				reportCPU(b, t0)
			})
		}
	}
}

// BenchmarkMaxPool: the ImageNet stem's MaxPool2d(3, 2, 1) on resnet18's
// 112x112 planes, forward (the Go loop and the AVX2 one, in 2 alternating
// rounds) and backward:
//
//	go test -run - -bench MaxPool -cpu 1 ./cpuops/
func BenchmarkMaxPool(b *testing.B) {
	p, err := NewMaxPool(16, 64, 112, 112, 3, 2, 1)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	x, y := randF32(rng, p.InLen()), make([]float32, p.OutLen())
	dy, dx := randF32(rng, p.OutLen()), make([]float32, p.InLen())
	avx2 := useAVX2
	defer func() { useAVX2 = avx2 }()
	for r := 1; r <= 2; r++ { // the Go loop and the AVX2 one, alternating
		for _, v := range []bool{false, true} {
			name := map[bool]string{false: "go", true: "avx2"}[v]
			b.Run(fmt.Sprintf("fwd/r%d/%s", r, name), func(b *testing.B) {
				if v && !avx2 {
					b.Skip("no AVX2")
				}
				useAVX2 = v
				t0 := cpuTime()
				for i := 0; i < b.N; i++ {
					p.Forward(x, y)
				}
				reportCPU(b, t0)
			})
		}
	}
	useAVX2 = avx2
	b.Run("bwd", func(b *testing.B) {
		p.Forward(x, y)
		b.ResetTimer()
		t0 := cpuTime()
		for i := 0; i < b.N; i++ {
			p.Backward(dy, dx)
		}
		reportCPU(b, t0)
	})
}
