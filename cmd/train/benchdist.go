package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"stoke/dist"
)

// benchDist is `train bench-dist`: the configured run on 1 rank and under
// `mpirun -np N`, each in child processes, the same batch per rank (weak
// scaling, as DDP is used); it reports training img/s over all ranks and,
// from the runs' own measurements, the gradient allreduce time per step
// and the share of it that overlapped backward — with the configured
// buckets and with small ones, which start while backward still runs.
func benchDist(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench-dist", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "YAML config file; without one, the built-in quickstart")
	ranks := fs.String("ranks", "1,2", "rank counts to run, comma-separated")
	buckets := fs.String("bucket-mb", "25,0.02", "train.dist_bucket_mb values to run with more than one rank, comma-separated")
	epochs := fs.Int("epochs", 1, "epochs per run (the last one is reported)")
	out := fs.String("out", "runs/bench-dist", "folder for the runs and the report (bench-dist.md, bench-dist.json)")
	mpiArgs := fs.String("mpirun-args", "--allow-run-as-root --oversubscribe", "arguments for mpirun before -np")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: train bench-dist [--config FILE] [--ranks 1,2] [--bucket-mb 25,0.02] [--epochs N] [--out DIR] [-- train flags...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	extra := fs.Args() // train flags for every run
	ns, err1 := positiveList(*ranks, strconv.Atoi)
	bs, err2 := positiveList(*buckets, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	if err := errors.Join(err1, err2); err != nil || *epochs < 1 {
		fmt.Fprintf(stderr, "train bench-dist: %v (want positive numbers, --epochs >= 1)\n", err)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "train bench-dist: %v\n", err)
		return 1
	}
	mpirun, mpiErr := exec.LookPath("mpirun")
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "train bench-dist: %v\n", err)
		return 1
	}
	type row struct {
		Ranks        int     `json:"ranks"`
		BucketMB     float64 `json:"bucket_mb,omitempty"`
		ImgPerSec    float64 `json:"img_per_s"`
		AllreduceMS  float64 `json:"allreduce_ms_per_step,omitempty"` // first bucket started to last one done
		ExposedMS    float64 `json:"waited_ms_per_step,omitempty"`    // of which after backward had ended
		OverlapShare float64 `json:"overlap_share,omitempty"`
		Buckets      int     `json:"buckets,omitempty"`
		AloneUS      float64 `json:"allreduce_alone_us,omitempty"` // one step's gradients, ranks lined up first
		Note         string  `json:"note,omitempty"`
	}
	var rows []row
	allreduce := regexp.MustCompile(`allreduce: ([0-9.]+) ms/step of communication, ([0-9.]+) ms/step waited after backward, ([0-9.]+)% overlapped backward \(\d+ steps, (\d+) buckets`)
	for _, n := range ns {
		variants := []float64{0}
		if n > 1 {
			variants = bs
		}
		for _, mb := range variants {
			name := fmt.Sprintf("ranks%d", n)
			if n > 1 {
				name += fmt.Sprintf("-bucket%gMB", mb)
			}
			run := filepath.Join(*out, name)
			os.RemoveAll(run)
			targs := append([]string{"train"}, extra...) // the bench's own flags after them, to win
			if *cfgPath != "" {
				targs = append(targs, "--config", *cfgPath)
			}
			targs = append(targs, "--epochs", strconv.Itoa(*epochs), "--out", run, "--train.progress", "none")
			var cmd *exec.Cmd
			if n == 1 {
				cmd = exec.Command(self, append(targs, "--train.dist", "none")...)
			} else {
				if mpiErr != nil {
					rows = append(rows, row{Ranks: n, BucketMB: mb, Note: "not run: mpirun is not installed (Debian: apt-get install openmpi-bin)"})
					continue
				}
				a := append(strings.Fields(*mpiArgs), "-np", strconv.Itoa(n), "-x", "STOKE_TRAIN_MAIN", self)
				cmd = exec.Command(mpirun, append(a, append(targs, "--train.dist", "mpi", "--train.dist_bucket_mb", fmt.Sprint(mb))...)...)
			}
			cmd.Env = append(os.Environ(), "STOKE_TRAIN_MAIN=1")
			fmt.Fprintf(stdout, "running %s: %s\n", name, strings.Join(cmd.Args, " "))
			var buf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(stderr, "train bench-dist: %s: %v\n%s", name, err, buf.String())
				return 1
			}
			r := row{Ranks: n, BucketMB: mb}
			if m := allreduce.FindAllStringSubmatch(buf.String(), -1); len(m) > 0 {
				last := m[len(m)-1]
				r.AllreduceMS, _ = strconv.ParseFloat(last[1], 64)
				r.ExposedMS, _ = strconv.ParseFloat(last[2], 64)
				pct, _ := strconv.ParseFloat(last[3], 64)
				r.OverlapShare = pct / 100
				r.Buckets, _ = strconv.Atoi(last[4])
			}
			b, err := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
			if err != nil {
				fmt.Fprintf(stderr, "train bench-dist: %s: %v\n", name, err)
				return 1
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			var m struct {
				ImgPerSec float64 `json:"img_per_s"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
				fmt.Fprintf(stderr, "train bench-dist: %s: metrics.jsonl: %v\n", name, err)
				return 1
			}
			r.ImgPerSec = m.ImgPerSec
			if n > 1 && r.Buckets > 0 {
				a := append(strings.Fields(*mpiArgs), "-np", strconv.Itoa(n), "-x", "STOKE_TRAIN_MAIN", self, "bench-allreduce", "--floats", strconv.Itoa(gradFloats(buf.String())))
				ab, err := exec.Command(mpirun, a...).CombinedOutput()
				if m := regexp.MustCompile(`median ([0-9.]+) µs`).FindSubmatch(ab); err == nil && m != nil {
					r.AloneUS, _ = strconv.ParseFloat(string(m[1]), 64)
				} else {
					fmt.Fprintf(stderr, "train bench-dist: bench-allreduce: %v\n%s", err, ab)
				}
			}
			rows = append(rows, r)
		}
	}
	var md strings.Builder
	fmt.Fprintf(&md, "| ranks | bucket MB | buckets | train img/s (all ranks) | allreduce ms/step | waited after backward ms/step | overlapped backward | allreduce alone µs |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if r.Note != "" {
			fmt.Fprintf(&md, "| %d | %g | | %s | | | | |\n", r.Ranks, r.BucketMB, r.Note)
			continue
		}
		if r.Ranks == 1 {
			fmt.Fprintf(&md, "| 1 | | | %.0f | | | | |\n", r.ImgPerSec)
			continue
		}
		fmt.Fprintf(&md, "| %d | %g | %d | %.0f | %.2f | %.2f | %.0f%% | %.0f |\n", r.Ranks, r.BucketMB, r.Buckets, r.ImgPerSec, r.AllreduceMS, r.ExposedMS, 100*r.OverlapShare, r.AloneUS)
	}
	fmt.Fprint(stdout, md.String())
	js, _ := json.MarshalIndent(rows, "", "  ")
	if err := errors.Join(os.WriteFile(filepath.Join(*out, "bench-dist.md"), []byte(md.String()), 0o644),
		os.WriteFile(filepath.Join(*out, "bench-dist.json"), append(js, '\n'), 0o644)); err != nil {
		fmt.Fprintf(stderr, "train bench-dist: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "written to %s (bench-dist.md, bench-dist.json)\n", *out)
	return 0
}

// gradFloats reads the floats per step from a run's allreduce line.
func gradFloats(out string) int {
	m := regexp.MustCompile(`buckets, ([0-9.]+) MB/step`).FindStringSubmatch(out)
	if m == nil {
		return 24235
	}
	mb, _ := strconv.ParseFloat(m[1], 64)
	return max(1, int(mb*(1<<20)/4))
}

func positiveList[T int | float64](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// benchAllreduce is the hidden `train bench-allreduce`, run by bench-dist
// under mpirun: the allreduce of one step's gradients alone, every rank
// lined up by a barrier first, so that the time is the engine's and not a
// wait for a slower rank. It prints the median of --iters.
func benchAllreduce(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench-allreduce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	floats := fs.Int("floats", 24235, "floats per allreduce")
	iters := fs.Int("iters", 200, "timed allreduces")
	if err := fs.Parse(args); err != nil || *floats < 1 || *iters < 1 {
		return 2
	}
	comm, err := dist.OpenMPI(dist.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "train bench-allreduce: %v\n", err)
		return 1
	}
	buf := make([]float32, *floats)
	times := make([]float64, 0, *iters)
	for i := range *iters + 10 {
		if err := comm.Barrier(); err != nil {
			comm.Abort(err)
		}
		t0 := time.Now()
		if err := comm.AllreduceSum(buf); err != nil {
			comm.Abort(err)
		}
		if i >= 10 {
			times = append(times, float64(time.Since(t0))/1e3)
		}
	}
	sort.Float64s(times)
	if comm.Rank() == 0 {
		fmt.Fprintf(stdout, "allreduce alone: %d floats (%.2f MB) on %d ranks: median %.1f µs over %d\n", *floats, float64(4**floats)/(1<<20), comm.Size(), times[len(times)/2], len(times))
	}
	comm.Close()
	return 0
}
