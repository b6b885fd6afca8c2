//go:build stokecuda

package cudaops

import (
	"errors"
	"fmt"
	"strings"

	"stoke/gemm"
)

// The GEMM choices (cuda.gemm): every GEMM of the engine (the convolutions'
// forward, backward-data and backward-filter products, the linear layer's
// three) goes through the one the engine picked at start.
const (
	GemmAuto   = "auto"   // cuBLAS when it loads, else our own, saying where it looked
	GemmCublas = "cublas" // cuBLAS, or an error (NoCublasError) listing where it looked
	GemmOwn    = "own"    // our own SGEMM (kernels.cu's sgemm): the fallback and the reference
)

// GemmChoices are the values cuda.gemm takes, in the order shown.
var GemmChoices = []string{GemmAuto, GemmCublas, GemmOwn}

// EngineOptions are the GPU engine's settings beyond the model's.
type EngineOptions struct {
	Gemm      string         // GemmAuto (also for ""), GemmCublas or GemmOwn
	Cublas    string         // cuda.cublas: a file or a folder; "" = search (CublasCandidates)
	Precision gemm.Precision // the GEMMs' inputs: fp32, TF32 or bf16 (train.precision)
	Graphs    string         // cuda.graphs: GraphsAuto (also for ""), GraphsOn or GraphsOff (a Backend's steps)
}

// GemmInfo is the GEMM an engine uses, for the run's device line.
type GemmInfo struct {
	Cublas    bool           // cuBLAS, else our own sgemm
	Path      string         // the cuBLAS library loaded
	Major     int            // its major version
	Precision gemm.Precision // the inputs' rounding
	Note      string         // with auto and no cuBLAS: why not, and where it looked
}

func (g GemmInfo) String() string {
	if g.Cublas {
		return fmt.Sprintf("gemm=cublas (cuBLAS %d, %s), precision=%s", g.Major, g.Path, g.Precision)
	}
	s := fmt.Sprintf("gemm=own, precision=%s", g.Precision)
	if g.Note != "" {
		s += " (" + g.Note + ")"
	}
	return s
}

func (o EngineOptions) check() error {
	switch o.Gemm {
	case "", GemmAuto, GemmCublas, GemmOwn:
	default:
		return fmt.Errorf("cuda.gemm is %q: want one of %s", o.Gemm, strings.Join(GemmChoices, ", "))
	}
	switch o.Graphs {
	case "", GraphsAuto, GraphsOn, GraphsOff:
	default:
		return fmt.Errorf("cuda.graphs is %q: want one of %s", o.Graphs, strings.Join(GraphsChoices, ", "))
	}
	switch o.Precision {
	case gemm.FP32, gemm.TF32, gemm.BF16:
	default:
		return fmt.Errorf("GEMM precision %s: want fp32, tf32 or bf16", o.Precision)
	}
	return nil
}

// selectGemm puts the engine's GEMMs on cuBLAS or our own kernel, as o
// asks, at o's precision. cuBLAS's handle is bound to the engine's stream,
// with its workspace allocated once (NewCublas). The caller has made the
// context current.
func (e *gpuEngine) selectGemm(o EngineOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	e.prec = o.Precision
	e.gemmInfo = GemmInfo{Precision: o.Precision}
	if o.Gemm == GemmOwn {
		return nil
	}
	bl, err := NewCublas(o.Cublas, e.s)
	if err != nil {
		if o.Gemm == GemmCublas {
			return fmt.Errorf("cuda.gemm cublas: %w", err)
		}
		var nc *NoCublasError
		if errors.As(err, &nc) {
			e.gemmInfo.Note = "cuda.gemm auto: no usable cuBLAS; looked in: " + strings.Join(nc.Tried, "; ")
		} else {
			e.gemmInfo.Note = "cuda.gemm auto: cuBLAS unusable: " + err.Error()
		}
		return nil
	}
	e.blas = bl
	e.gemmInfo = GemmInfo{Cublas: true, Path: bl.Path, Major: bl.Major, Precision: o.Precision}
	return nil
}

// sgemm is C (M,N) = op(A) · op(B) (row-major; A stored (Kd,M) when tA, B
// stored (N,Kd) when tB) on the GEMM the engine selected, at its precision.
func (e *gpuEngine) sgemm(tA, tB bool, M, N, Kd int, a, b, c buffer) error {
	if e.blas != nil {
		if M == 0 || N == 0 {
			return nil
		}
		return e.blas.Gemm(e.prec, tA, tB, M, N, Kd, 1, a.(devBuf).p, b.(devBuf).p, 0, c.(devBuf).p, 1, 0, 0, 0)
	}
	return e.ownSgemm(tA, tB, M, N, Kd, a, b, c)
}
