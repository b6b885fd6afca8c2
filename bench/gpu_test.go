package bench

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stoke/trainer"
)

// TestReadMetricsGPUCounters: a cuda run's per-step driver counters are the
// mean of its epochs' records (each epoch has the same steps); graph only
// when every epoch ran as a graph; a CPU run has none.
func TestReadMetricsGPUCounters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	os.WriteFile(path, []byte(`{"epoch":1,"train_seconds":10,"gpu":{"launches_per_step":40,"host_syncs_per_step":9,"allocs_per_step":0.5,"h2d_bytes_per_step":1000,"d2h_bytes_per_step":30,"graph":false}}
{"epoch":2,"train_seconds":30,"gpu":{"launches_per_step":42,"host_syncs_per_step":0.1,"allocs_per_step":0,"h2d_bytes_per_step":1000,"d2h_bytes_per_step":10,"graph":true}}
`), 0o644)
	r, err := readMetrics(path)
	if err != nil {
		t.Fatal(err)
	}
	want := trainer.GPUCounters{LaunchesPerStep: 41, HostSyncsPerStep: 4.55, AllocsPerStep: 0.25, H2DBytesPerStep: 1000, D2HBytesPerStep: 20}
	if r.GPU == nil || !nearGPU(*r.GPU, want) {
		t.Errorf("gpu %+v, want %+v (the epochs' mean, graph false: epoch 1 was not one)", r.GPU, want)
	}
	os.WriteFile(path, []byte(`{"epoch":1,"train_seconds":10}`+"\n"), 0o644)
	if r, err := readMetrics(path); err != nil || r.GPU != nil {
		t.Errorf("a CPU run's metrics: gpu %+v, err %v", r.GPU, err)
	}
	os.WriteFile(path, []byte(`{"epoch":1,"train_seconds":10}`+"\n"+`{"epoch":2,"train_seconds":10,"gpu":{"launches_per_step":1}}`+"\n"), 0o644)
	if _, err := readMetrics(path); err == nil || !strings.Contains(err.Error(), "1 of 2 epochs") {
		t.Errorf("gpu counters in one epoch of two: %v", err)
	}
}

func nearGPU(a, b trainer.GPUCounters) bool {
	near := func(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }
	return near(a.LaunchesPerStep, b.LaunchesPerStep) && near(a.HostSyncsPerStep, b.HostSyncsPerStep) &&
		near(a.AllocsPerStep, b.AllocsPerStep) && near(a.H2DBytesPerStep, b.H2DBytesPerStep) &&
		near(a.D2HBytesPerStep, b.D2HBytesPerStep) && a.Graph == b.Graph
}

// TestMedianGPUCounters: a variant's counters are its median runs', averaged
// when there are two.
func TestMedianGPUCounters(t *testing.T) {
	run := func(secs, syncs float64, graph bool) Result {
		return Result{TrainSeconds: secs, GPU: &trainer.GPUCounters{LaunchesPerStep: 42, HostSyncsPerStep: syncs, Graph: graph}}
	}
	m := median([]Result{run(9, 1, true), run(1, 3, true), run(5, 2, true)})
	if m.GPU == nil || !nearGPU(*m.GPU, trainer.GPUCounters{LaunchesPerStep: 42, HostSyncsPerStep: 2, Graph: true}) {
		t.Errorf("median of three: %+v, want the 5 s run's", m.GPU)
	}
	m = median([]Result{run(10, 1, true), run(20, 3, false)})
	if m.GPU == nil || !nearGPU(*m.GPU, trainer.GPUCounters{LaunchesPerStep: 42, HostSyncsPerStep: 2}) {
		t.Errorf("median of two: %+v, want their mean, graph false", m.GPU)
	}
	if m := median([]Result{{TrainSeconds: 1}}); m.GPU != nil {
		t.Errorf("a CPU run's median has gpu counters %+v", m.GPU)
	}
}

// TestReportGPUTable: on cuda the report has the device's table, a row per
// variant, and the CSV its counter columns; on the CPU neither has figures.
func TestReportGPUTable(t *testing.T) {
	g := &trainer.GPUCounters{LaunchesPerStep: 42, HostSyncsPerStep: 9, AllocsPerStep: 0, H2DBytesPerStep: 196608, D2HBytesPerStep: 2816}
	cuda := &Report{Results: []Result{
		{Variant: Variant{Name: "baseline"}, Impl: "stoke", TrainSeconds: 1, GPU: g},
		{Variant: Variant{Name: "all three"}, Impl: "stoke", TrainSeconds: 1, GPU: g},
	}}
	md := cuda.Markdown()
	for _, want := range []string{"| impl | variant | launches | host syncs | allocs | H2D bytes | D2H bytes | graph |",
		"| stoke | baseline | 42.0 | 9.00 | 0.00 | 196608 | 2816 | false |", "| stoke | all three | 42.0 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("cuda report lacks %q:\n%s", want, md)
		}
	}
	cpu := &Report{Results: []Result{{Variant: Variant{Name: "baseline"}, Impl: "stoke", TrainSeconds: 1}}}
	if md := cpu.Markdown(); strings.Contains(md, "launches") {
		t.Errorf("cpu report has a device table:\n%s", md)
	}
	for _, tc := range []struct {
		rep      *Report
		launches string
	}{{cuda, "42"}, {cpu, ""}} {
		dir := t.TempDir()
		if err := tc.rep.write(dir); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(dir, "bench.csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		col := -1
		for i, h := range rows[0] {
			if h == "launches_per_step" {
				col = i
			}
		}
		if col < 0 || rows[1][col] != tc.launches {
			t.Errorf("bench.csv launches_per_step column %d: %q, want %q", col, rows[1], tc.launches)
		}
	}
}
