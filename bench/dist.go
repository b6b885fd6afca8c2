package bench

import (
	"bytes"
	"encoding/json"
	"errors"
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

// DistOptions say what Dist runs.
type DistOptions struct {
	Exe      string    // the train binary, run for every measurement
	Config   string    // config file of the runs; "" = train's default
	Ranks    []int     // rank counts to run
	BucketMB []float64 // train.dist_bucket_mb values to run with more than one rank
	Epochs   int       // epochs per run (the last one is reported)
	Out      string    // folder for the runs and the report (bench-dist.md, bench-dist.json)
	MPIRun   []string  // mpirun's arguments before -np
	Extra    []string  // train flags for every run, before the bench's own
	Log      io.Writer // the command lines run, the table, where it was written
	Errors   io.Writer // why the allreduce alone could not be measured, when it could not
}

// DistRow is one row of bench-dist.json.
type DistRow struct {
	Ranks        int     `json:"ranks"`
	BucketMB     float64 `json:"bucket_mb,omitempty"`
	ImgPerSec    float64 `json:"img_per_s"`
	AllreduceMS  float64 `json:"allreduce_ms_per_step,omitempty"` // first bucket started to last one done
	ExposedMS    float64 `json:"waited_ms_per_step,omitempty"`    // of which after backward had ended
	OverlapShare float64 `json:"overlap_share,omitempty"`
	Buckets      int     `json:"buckets,omitempty"`
	AloneUS      float64 `json:"allreduce_alone_us,omitempty"` // one step's gradients, ranks lined up first
	Note         string  `json:"note,omitempty"`
	Load         *Load   `json:"load,omitempty"` // the run's wall and CPU time (all ranks), other processes' cores
	Busy         string  `json:"busy,omitempty"` // Load.Busy: why the machine was too busy to trust the row
}

// allreduceLine is the line a data-parallel run prints at its end.
var allreduceLine = regexp.MustCompile(`allreduce: ([0-9.]+) ms/step of communication, ([0-9.]+) ms/step waited after backward, ([0-9.]+)% overlapped backward \(\d+ steps, (\d+) buckets`)

// Dist is `train bench-dist`: the configured run on 1 rank and under
// `mpirun -np N`, each in child processes, the same batch per rank (weak
// scaling, as DDP is used); it reports training img/s over all ranks and,
// from the runs' own measurements, the gradient allreduce time per step
// and the share of it that overlapped backward — with the configured
// buckets and with small ones, which start while backward still runs —
// and, run apart under mpirun (`train bench-allreduce`, Allreduce), the
// allreduce of one step's gradients alone.
func Dist(opt DistOptions) ([]DistRow, error) {
	mpirun, mpiErr := exec.LookPath("mpirun")
	if err := os.MkdirAll(opt.Out, 0o755); err != nil {
		return nil, err
	}
	mach := ThisMachine()
	fmt.Fprintf(opt.Log, "machine: %s\n", mach)
	if why := BusyBefore(); why != "" {
		fmt.Fprintf(opt.Log, "WARNING: the machine is busy (%s): the figures below are not this machine's speed\n", why)
	}
	var rows []DistRow
	for _, n := range opt.Ranks {
		variants := []float64{0}
		if n > 1 {
			variants = opt.BucketMB
		}
		for _, mb := range variants {
			name := fmt.Sprintf("ranks%d", n)
			if n > 1 {
				name += fmt.Sprintf("-bucket%gMB", mb)
			}
			run := filepath.Join(opt.Out, name)
			os.RemoveAll(run)
			if n > 1 && mpiErr != nil {
				rows = append(rows, DistRow{Ranks: n, BucketMB: mb, Note: "not run: mpirun is not installed (Debian: apt-get install openmpi-bin)"})
				continue
			}
			r, err := runDist(opt, mpirun, name, run, n, mb)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r)
		}
	}
	if err := writeDistReport(opt, mach, rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// runDist trains the configured run once into the folder run, on n ranks
// (under mpirun when n > 1) with buckets of mb MB, and measures it: the
// machine's load meanwhile, the training img/s and the run's allreduce
// line, and then the allreduce of one step's gradients alone.
func runDist(opt DistOptions, mpirun, name, run string, n int, mb float64) (DistRow, error) {
	cmd := distCommand(opt, mpirun, run, n, mb)
	fmt.Fprintf(opt.Log, "running %s: %s\n", name, strings.Join(cmd.Args, " "))
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	meter := startLoad()
	if err := cmd.Run(); err != nil {
		return DistRow{}, fmt.Errorf("%s: %v\n%s", name, err, strings.TrimSuffix(buf.String(), "\n"))
	}
	load := meter.stop()
	r := DistRow{Ranks: n, BucketMB: mb, Load: &load, Busy: load.Busy(0)}
	fmt.Fprintf(opt.Log, "  %s\n", load)
	if r.Busy != "" {
		fmt.Fprintf(opt.Log, "  WARNING: the machine was busy (%s)\n", r.Busy)
	}
	if m := allreduceLine.FindAllStringSubmatch(buf.String(), -1); len(m) > 0 {
		last := m[len(m)-1]
		r.AllreduceMS, _ = strconv.ParseFloat(last[1], 64)
		r.ExposedMS, _ = strconv.ParseFloat(last[2], 64)
		pct, _ := strconv.ParseFloat(last[3], 64)
		r.OverlapShare = pct / 100
		r.Buckets, _ = strconv.Atoi(last[4])
	}
	ips, err := lastImgPerSec(filepath.Join(run, "metrics.jsonl"))
	if err != nil {
		return DistRow{}, fmt.Errorf("%s: %v", name, err)
	}
	r.ImgPerSec = ips
	if n > 1 && r.Buckets > 0 {
		a := append(append([]string(nil), opt.MPIRun...), "-np", strconv.Itoa(n), "-x", "STOKE_TRAIN_MAIN", opt.Exe, "bench-allreduce", "--floats", strconv.Itoa(gradFloats(buf.String())))
		ab, err := exec.Command(mpirun, a...).CombinedOutput()
		if m := regexp.MustCompile(`median ([0-9.]+) µs`).FindSubmatch(ab); err == nil && m != nil {
			r.AloneUS, _ = strconv.ParseFloat(string(m[1]), 64)
		} else {
			fmt.Fprintf(opt.Errors, "train bench-dist: bench-allreduce: %v\n%s", err, ab)
		}
	}
	return r, nil
}

// distCommand is the child that trains into run: `train` with the bench's
// flags after the user's, on one rank with train.dist none, or under
// `mpirun -np n` with train.dist mpi and buckets of mb MB.
func distCommand(opt DistOptions, mpirun, run string, n int, mb float64) *exec.Cmd {
	targs := append([]string{"train"}, opt.Extra...) // the bench's own flags after them, to win
	if opt.Config != "" {
		targs = append(targs, "--config", opt.Config)
	}
	targs = append(targs, "--epochs", strconv.Itoa(opt.Epochs), "--out", run, "--train.progress", "none")
	var cmd *exec.Cmd
	if n == 1 {
		cmd = exec.Command(opt.Exe, append(targs, "--train.dist", "none")...)
	} else {
		a := append(append([]string(nil), opt.MPIRun...), "-np", strconv.Itoa(n), "-x", "STOKE_TRAIN_MAIN", opt.Exe)
		cmd = exec.Command(mpirun, append(a, append(targs, "--train.dist", "mpi", "--train.dist_bucket_mb", fmt.Sprint(mb))...)...)
	}
	cmd.Env = append(os.Environ(), "STOKE_TRAIN_MAIN=1")
	return cmd
}

// writeDistReport prints the machine, the table and the busy warnings to
// opt.Log and writes them to bench-dist.md, and the rows to
// bench-dist.json, in opt.Out.
func writeDistReport(opt DistOptions, mach Machine, rows []DistRow) error {
	md := "machine: " + mach.String() + "\n\n" + DistMarkdown(rows)
	for _, r := range rows {
		if r.Busy != "" {
			md += fmt.Sprintf("WARNING: %d ranks, bucket %g MB: the machine was busy: %s\n", r.Ranks, r.BucketMB, r.Busy)
		}
	}
	fmt.Fprint(opt.Log, md)
	js, _ := json.MarshalIndent(rows, "", "  ")
	if err := errors.Join(os.WriteFile(filepath.Join(opt.Out, "bench-dist.md"), []byte(md), 0o644),
		os.WriteFile(filepath.Join(opt.Out, "bench-dist.json"), append(js, '\n'), 0o644)); err != nil {
		return err
	}
	fmt.Fprintf(opt.Log, "written to %s (bench-dist.md, bench-dist.json)\n", opt.Out)
	return nil
}

// DistMarkdown is the table of bench-dist.md.
func DistMarkdown(rows []DistRow) string {
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
	return md.String()
}

// lastImgPerSec is the training img/s of a run's last metrics record.
func lastImgPerSec(metrics string) (float64, error) {
	b, err := os.ReadFile(metrics)
	if err != nil {
		return 0, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var m struct {
		ImgPerSec float64 `json:"img_per_s"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		return 0, fmt.Errorf("metrics.jsonl: %v", err)
	}
	return m.ImgPerSec, nil
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

// Allreduce times the allreduce of floats float32s alone, iters times
// after 10 untimed ones, every rank lined up by a barrier first so that
// the time is the engine's and not a wait for a slower rank, and returns
// the median in µs. A failed collective aborts the job (comm.Abort).
func Allreduce(comm dist.Comm, floats, iters int) float64 {
	buf := make([]float32, floats)
	times := make([]float64, 0, iters)
	for i := range iters + 10 {
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
	return times[len(times)/2]
}
