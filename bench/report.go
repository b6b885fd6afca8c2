package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"stoke/trainer"
)

// Markdown renders the results as the table printed on stdout.
// Above the table: the machine, PyTorch's BLAS and kernels, the load over
// the whole bench, and every warning, so that a figure is never read
// without what it ran on.
func (rep *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "machine: %s\n", rep.Machine)
	for _, r := range rep.Results {
		if r.Impl == "pytorch" && r.BLAS != "" {
			fmt.Fprintf(&b, "PyTorch: BLAS %s %s, CPU capability %s\n", r.BLAS, r.OpenBLASCore, r.CPUCapability)
			break
		}
	}
	fmt.Fprintf(&b, "%s\n", rep.Load)
	for _, w := range rep.Warnings {
		fmt.Fprintf(&b, "WARNING: %s\n", w)
	}
	fmt.Fprintf(&b, "\n| impl | variant | workers | pin_memory | non_blocking | train time (s) | s/epoch | img/s | wait | copy | compute | device busy | final loss | peak RSS (MiB) | speedup | CPU (s) | others' cores | note |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "| %s | %s | %d | %t | %t | %.1f | %.2f | %.0f | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %.4f | %d | %.2fx | %.1f | %.2f | %s |\n",
			r.Impl, r.Name, r.Workers, r.PinMemory, r.NonBlocking, r.TrainSeconds, r.SecPerEpoch, r.ImgPerSec,
			100*r.WaitShare, 100*r.CopyShare, 100*r.ComputeShare, 100*r.DeviceBusy, r.FinalLoss, r.PeakRSSBytes>>20, r.Speedup,
			r.CPUSeconds, r.OthersCores, r.Note)
	}
	b.WriteString(rep.gpuTable())
	return b.String()
}

// gpuTable is the device's table, on --device cuda: each variant's driver
// calls per training step (metrics.jsonl's gpu; docs/cuda.md, "What a step
// costs the host"), or "" when no result has them (the CPU).
func (rep *Report) gpuTable() string {
	var b strings.Builder
	for _, r := range rep.Results {
		if r.GPU == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nPer training step on the device, counted at the driver calls, on a GPU as under the stand-in (cuBLAS's own launches are not counted):\n\n")
			b.WriteString("| impl | variant | launches | host syncs | allocs | H2D bytes | D2H bytes | graph |\n|---|---|---|---|---|---|---|---|\n")
		}
		g := r.GPU
		fmt.Fprintf(&b, "| %s | %s | %.1f | %.2f | %.2f | %.0f | %.0f | %t |\n",
			r.Impl, r.Name, g.LaunchesPerStep, g.HostSyncsPerStep, g.AllocsPerStep, g.H2DBytesPerStep, g.D2HBytesPerStep, g.Graph)
	}
	return b.String()
}

// write saves bench.md, bench.json, bench.csv and the chart into dir.
func (rep *Report) write(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "bench.md"), []byte(rep.Markdown()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "bench.csv"))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"impl", "variant", "workers", "pin_memory", "non_blocking", "rounds", "train_seconds", "s_per_epoch", "img_per_s",
		"wait_share", "copy_share", "compute_share", "device_busy", "final_loss", "peak_rss_bytes", "speedup", "cpu_seconds", "others_cores", "note",
		"launches_per_step", "host_syncs_per_step", "allocs_per_step", "h2d_bytes_per_step", "d2h_bytes_per_step", "graph"})
	for _, r := range rep.Results {
		w.Write(append([]string{r.Impl, r.Name, fmt.Sprint(r.Workers), fmt.Sprint(r.PinMemory), fmt.Sprint(r.NonBlocking), fmt.Sprint(r.Rounds),
			g(r.TrainSeconds), g(r.SecPerEpoch), g(r.ImgPerSec), g(r.WaitShare), g(r.CopyShare), g(r.ComputeShare), g(r.DeviceBusy),
			g(r.FinalLoss), fmt.Sprint(r.PeakRSSBytes), g(r.Speedup), g(r.CPUSeconds), g(r.OthersCores), r.Note}, gpuColumns(r.GPU)...))
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return rep.chart(dir)
}

// gpuColumns are the CSV's counter columns: empty where there are none.
func gpuColumns(c *trainer.GPUCounters) []string {
	if c == nil {
		return make([]string, 6)
	}
	return []string{g(c.LaunchesPerStep), g(c.HostSyncsPerStep), g(c.AllocsPerStep), g(c.H2DBytesPerStep), g(c.D2HBytesPerStep), fmt.Sprint(c.Graph)}
}

func g(v float64) string { return fmt.Sprintf("%.6g", v) }
