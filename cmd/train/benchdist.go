package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"stoke/bench"
	"stoke/dist"
)

// benchDist is `train bench-dist`: the configured run on 1 rank and under
// `mpirun -np N`, img/s and the allreduce's cost (bench.Dist).
func benchDist(args []string, stdout, stderr io.Writer) int {
	c := newSubcommand("bench-dist", "usage: train bench-dist [--config FILE] [--ranks 1,2] [--bucket-mb 25,0.02] [--epochs N] [--out DIR] [-- train flags...]\n", stderr)
	c.takesArgs = true // train flags for every run
	cfgPath := c.String("config", "", "YAML config file; without one, the built-in quickstart")
	ranks := c.intList("ranks", "1,2", "rank counts to run, comma-separated", 1)
	buckets := c.positiveFloatList("bucket-mb", "25,0.02", "train.dist_bucket_mb values to run with more than one rank, comma-separated")
	epochs := c.Int("epochs", 1, "epochs per run (the last one is reported)")
	out := c.String("out", "runs/bench-dist", "folder for the runs and the report (bench-dist.md, bench-dist.json)")
	mpiArgs := c.String("mpirun-args", "--allow-run-as-root --oversubscribe", "arguments for mpirun before -np")
	if code, ok := c.parse(args); !ok {
		return code
	}
	switch {
	case len(*ranks) == 0:
		return c.badValue("ranks", `""`, "one rank count or more")
	case len(*buckets) == 0:
		return c.badValue("bucket-mb", `""`, "one bucket size or more")
	case *epochs < 1:
		return c.badValue("epochs", *epochs, "at least 1")
	}
	self, err := os.Executable()
	if err != nil {
		return c.fail(1, "%v", err)
	}
	_, err = bench.Dist(bench.DistOptions{Exe: self, Config: *cfgPath, Ranks: *ranks, BucketMB: *buckets, Epochs: *epochs,
		Out: *out, MPIRun: strings.Fields(*mpiArgs), Extra: c.Args(), Log: stdout, Errors: stderr})
	if err != nil {
		return c.fail(1, "%v", err)
	}
	return 0
}

// benchAllreduce is the hidden `train bench-allreduce`, run by bench-dist
// under mpirun: the allreduce of one step's gradients alone
// (bench.Allreduce). Rank 0 prints the median of --iters.
func benchAllreduce(args []string, stdout, stderr io.Writer) int {
	c := newSubcommand("bench-allreduce", "usage: train bench-allreduce [--floats N] [--iters N] (under mpirun; run by bench-dist)\n", stderr)
	floats := c.Int("floats", 24235, "floats per allreduce")
	iters := c.Int("iters", 200, "timed allreduces")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *floats < 1 {
		return c.badValue("floats", *floats, "at least 1")
	}
	if *iters < 1 {
		return c.badValue("iters", *iters, "at least 1")
	}
	comm, err := dist.OpenMPI(dist.Options{})
	if err != nil {
		return c.fail(1, "%v", err)
	}
	median := bench.Allreduce(comm, *floats, *iters)
	if comm.Rank() == 0 {
		fmt.Fprintf(stdout, "allreduce alone: %d floats (%.2f MB) on %d ranks: median %.1f µs over %d\n", *floats, float64(4**floats)/(1<<20), comm.Size(), median, *iters)
	}
	comm.Close()
	return 0
}
