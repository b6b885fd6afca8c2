package bench

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseCPUInfo: the first processor's name, family, model and the SIMD
// flags of interest are read; a second processor's block is not.
func TestParseCPUInfo(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n" +
		"flags\t\t: fpu sse2 avx2 fma avx512f avx512_bf16 avx512_vnni\n\n" +
		"processor\t: 1\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: other\n"
	m := parseCPUInfo([]byte(info), Machine{CPUs: 2, Stoke: "AVX2+FMA"})
	if m.CPU != "AMD EPYC" || m.Family != 26 || m.Model != 2 || !slices.Equal(m.SIMD, []string{"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"}) {
		t.Errorf("parsed %+v", m)
	}
	if s := m.String(); !strings.Contains(s, "AMD EPYC (family 26, model 2), 2 CPUs") || !strings.Contains(s, "stoke uses AVX2+FMA") {
		t.Errorf("String() = %q", s)
	}
}

// TestLoadBusy: a measurement is called busy when other processes kept
// more than a quarter of a core busy, or when it got well under the cores
// it asked for; a quiet one, a short one and an unknown one are not.
func TestLoadBusy(t *testing.T) {
	for _, c := range []struct {
		l       Load
		threads int
		want    string // a part of the message; "" = quiet
	}{
		{Load{WallSeconds: 10, CPUSeconds: 19, OthersCores: 0.05}, 2, ""},
		{Load{WallSeconds: 10, CPUSeconds: 19, OthersCores: 1.2}, 2, "other processes kept 1.20 cores busy"},
		{Load{WallSeconds: 10, CPUSeconds: 11, OthersCores: 0}, 2, "it used 1.10 cores of the 2 it asked for"},
		{Load{WallSeconds: 10, CPUSeconds: 11, OthersCores: 0}, 0, ""},    // no cores asked for
		{Load{WallSeconds: 0.2, CPUSeconds: 0.01, OthersCores: 3}, 1, ""}, // too short to judge
		{Load{WallSeconds: 10, CPUSeconds: 10, OthersCores: -1}, 1, ""},   // /proc/stat unknown
	} {
		got := c.l.Busy(c.threads)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%+v, %d threads: Busy = %q, want %q", c.l, c.threads, got, c.want)
		}
	}
}

// TestLoadMeasuresThisProcess: 0.3 s of spinning shows as at most that
// much of our CPU time (some of it, on a loaded machine), never none.
func TestLoadMeasuresThisProcess(t *testing.T) {
	m := startLoad()
	x := 0.0
	for i := 0; m.t.Add(300 * time.Millisecond).After(time.Now()); i++ {
		x += float64(i)
	}
	l := m.stop()
	if l.CPUSeconds <= 0 || l.CPUSeconds > l.WallSeconds*1.5+0.05 || x < 0 {
		t.Errorf("spun %.2f s: CPU %.2f s", l.WallSeconds, l.CPUSeconds)
	}
}

// TestTorchEnv: the PyTorch process gets OpenBLAS's own core detection, or bench-env.sh's core
// (the machine's OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE dropped) and
// glibc's keep-memory settings, once each; everything else is kept.
func TestTorchEnv(t *testing.T) {
	got := TorchEnv([]string{"PATH=/bin", "OPENBLAS_CORETYPE=Haswell", "OPENBLAS_L2_SIZE=512", "MALLOC_TRIM_THRESHOLD_=1", "HOME=/root"})
	want := []string{"PATH=/bin", "HOME=/root", "MALLOC_MMAP_THRESHOLD_=4294967296", "MALLOC_TRIM_THRESHOLD_=68719476736"}
	if !slices.Equal(got, want) {
		t.Errorf("TorchEnv = %q, want %q", got, want)
	}
	// bench-env.sh's choice where OpenBLAS's detection falls back to a generic core
	got = TorchEnv([]string{"OPENBLAS_CORETYPE=Haswell", "TORCH_OPENBLAS_CORE=Cooperlake"})
	want = []string{"TORCH_OPENBLAS_CORE=Cooperlake", "OPENBLAS_CORETYPE=Cooperlake", "MALLOC_MMAP_THRESHOLD_=4294967296", "MALLOC_TRIM_THRESHOLD_=68719476736"}
	if !slices.Equal(got, want) {
		t.Errorf("TorchEnv with TORCH_OPENBLAS_CORE = %q, want %q", got, want)
	}
}

// TestMarkdownNamesTheMachine: the report's table comes after the machine,
// PyTorch's BLAS, the load and the warnings, and has each run's CPU time.
func TestMarkdownNamesTheMachine(t *testing.T) {
	rep := &Report{
		Machine:  Machine{CPU: "AMD EPYC", Family: 26, Model: 2, CPUs: 2, Stoke: "AVX2+FMA"},
		Load:     Load{WallSeconds: 80, CPUSeconds: 150, OthersCores: 0.4},
		Warnings: []string{"round 1, stoke baseline: the machine was busy: x"},
		Results: []Result{
			{Variant: Variant{Name: "baseline"}, Impl: "stoke", TrainSeconds: 3, CPUSeconds: 5.5, OthersCores: 0.1},
			{Variant: Variant{Name: "baseline"}, Impl: "pytorch", TrainSeconds: 9, BLAS: "OpenBLAS", OpenBLASCore: "SkylakeX", CPUCapability: "AVX2"},
		},
	}
	md := rep.Markdown()
	for _, want := range []string{"machine: AMD EPYC (family 26, model 2)", "PyTorch: BLAS OpenBLAS SkylakeX, CPU capability AVX2",
		"wall 80.0 s, CPU 150.0 s; other processes 0.40 cores", "WARNING: round 1, stoke baseline", "| CPU (s) | others' cores |", "| 5.5 | 0.10 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("bench.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, "WARNING") > strings.Index(md, "| impl |") {
		t.Errorf("the warnings come after the table:\n%s", md)
	}
}
