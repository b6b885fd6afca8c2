package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"stoke/bench"
	"stoke/config"
	"stoke/configs"
	"stoke/trainer"
)

// benchCmd is `train bench`: the "3 lines, ~5x" experiment side by side.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	c := newSubcommand("bench", "Usage: train bench [--config configs/blog.yaml] [--epochs N] [--device cpu|cuda] [options]\n\n"+
		"Runs the baseline (0 workers, pageable, blocking), each switch alone and all three, alternating,\n"+
		"each as a child process, then the same in PyTorch at its best (OpenBLAS's own core detection, a\n"+
		"malloc that keeps memory); writes a table, a chart and a timeline per run, with the CPU, torch's\n"+
		"BLAS, the load and each run's CPU time, and warns when the machine was busy. On --device cuda a\n"+
		"second table gives each variant's driver calls per training step (launches, host syncs,\n"+
		"allocations, bytes each way, graph: metrics.jsonl's gpu record).\n\n", stderr)
	cfgPath := c.String("config", "configs/blog.yaml", "the experiment's config (the built-in one when this file is absent)")
	epochs := c.Int("epochs", 0, "epochs of every run; 0 = the config's")
	device := c.String("device", "", "cpu or cuda; empty = the config's")
	workers := c.Int("workers", 8, "loader workers in the num_workers and all-three runs (the post's 8)")
	rounds := c.Int("rounds", 2, "runs of each variant; the variants alternate within a round, and the table shows medians")
	out := c.String("out", "runs/bench", "report folder: bench.md, bench.json, bench.csv, chart.png, chart.svg, runs/*/trace.json")
	data := c.String("data", "", "dataset folder (overrides the config's data.root)")
	python := c.String("python", "/usr/bin/python3", "python with torch and torchvision for the PyTorch rows; empty = no PyTorch rows")
	script := c.String("pytorch-script", "scripts/blog_pytorch.py", "the PyTorch side of the experiment")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return c.fail(1, "%v", err)
	}
	cfgFile, cfg, err := benchConfig(*cfgPath, *out)
	if err == nil && *epochs > 0 {
		cfg.Train.Epochs = *epochs
	}
	if err == nil && *device != "" {
		cfg.Train.Device = *device
	}
	if err == nil {
		if *data != "" {
			cfg.Data.Root = *data
		}
		err = cfg.Validate()
	}
	if err != nil {
		return c.fail(2, "%v", err)
	}
	root, err := trainer.DatasetRoot(cfg.Data, stdout)
	if err != nil {
		return c.fail(1, "%v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return c.fail(1, "cannot find this program to run each variant: %v", err)
	}
	opt := bench.Options{
		Config: cfgFile, Epochs: cfg.Train.Epochs, Device: cfg.Train.Device, Workers: *workers, Rounds: *rounds,
		Out: *out, Exe: exe, Extra: []string{"--data", root}, Log: stdout,
		Spec: bench.Spec{
			Data: root, ImageSize: cfg.Data.ImageSize, BatchSize: cfg.Data.BatchSize, Prefetch: cfg.Data.Prefetch,
			Epochs: cfg.Train.Epochs, Workers: *workers, Device: cfg.Train.Device, Seed: cfg.Train.Seed,
			Augment: cfg.Augment, Conv: cfg.Model.Conv, Optim: cfg.Optim,
		},
	}
	if *python != "" {
		if why := pytorchMissing(*python, *script); why != "" {
			fmt.Fprintf(stdout, "note: no PyTorch rows: %s\n", why)
		} else {
			opt.PyTorch = []string{*python, *script}
		}
	}
	fmt.Fprintf(stdout, "bench: %s on %s, %d epochs, %d round(s), dataset %s\n", cfgFile, cfg.Train.Device, cfg.Train.Epochs, *rounds, root)
	ctx, stop := interruptContext(stderr)
	defer stop()
	rep, err := bench.Run(ctx, opt)
	if err != nil {
		return c.fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "\n%s\n", rep.Markdown())
	if cfg.Train.Device == "cpu" {
		fmt.Fprintln(stdout, "On the cpu, pin_memory and non_blocking cannot act (there is no device to copy to): their rows measure the same pipeline as the baseline.")
	}
	fmt.Fprintf(stdout, "report: %s/bench.md, bench.json, bench.csv, chart.png, chart.svg; timelines: %s/runs/*/trace.json (open in https://ui.perfetto.dev); %.0fs in all\n",
		*out, *out, rep.Seconds)
	return 0
}

// benchConfig loads the experiment's config; when the file is absent and
// names a shipped config, the built-in copy is written into the report
// folder for the child runs to read.
func benchConfig(path, out string) (string, config.Config, error) {
	if _, err := os.Stat(path); err == nil {
		c, err := config.Load(path)
		return path, c, err
	}
	b, err := configs.FS.ReadFile(filepath.Base(path))
	if err != nil {
		return "", config.Config{}, fmt.Errorf("config %s: no such file, and no built-in config of that name", path)
	}
	c, err := config.Parse(b, "built-in "+filepath.Base(path))
	if err != nil {
		return "", config.Config{}, err
	}
	copyPath := filepath.Join(out, filepath.Base(path))
	return copyPath, c, os.WriteFile(copyPath, b, 0o644)
}

// pytorchMissing says why the PyTorch rows cannot run, or "" when they can.
func pytorchMissing(python, script string) string {
	if _, err := os.Stat(script); err != nil {
		return fmt.Sprintf("%s not found (run from the repository root)", script)
	}
	if err := exec.Command(python, "-c", "import torch, torchvision").Run(); err != nil {
		return fmt.Sprintf("%s cannot import torch and torchvision (Debian: apt-get install python3-torch python3-torchvision)", python)
	}
	return ""
}
