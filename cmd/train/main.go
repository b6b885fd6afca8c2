// Command train trains an image classifier with stoke.
//
//	train [--config FILE] [--key=value ...]   train (the quickstart when no config is given)
//	train gen-data --out DIR [options]        write a synthetic JPEG ImageFolder dataset
//	train bench [--config FILE] [options]     the "3 lines, ~5x" experiment side by side
//	train eval --checkpoint RUN               a checkpoint's accuracy on a validation split
//	train bench-data --config FILE            the loader alone: img/s per worker count, µs per stage
//	train bench-step --config FILE            the model alone: ms per training step, peak RSS
//	train bench-dist [--ranks 1,2]            data parallel: img/s on 1 and N ranks, allreduce time, overlap
//
// Run `train --help` for every setting.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"stoke/config"
	"stoke/configs"
	"stoke/trace"
	"stoke/trainer"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, for tests: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "gen-data":
			return genData(args[1:], stdout, stderr)
		case "bench":
			return benchCmd(args[1:], stdout, stderr)
		case "eval":
			return evalCmd(args[1:], stdout, stderr)
		case "bench-data":
			return benchData(args[1:], stdout, stderr)
		case "bench-step":
			return benchStep(args[1:], stdout, stderr)
		case "bench-dist":
			return benchDist(args[1:], stdout, stderr)
		case "bench-allreduce": // run by bench-dist under mpirun
			return benchAllreduce(args[1:], stdout, stderr)
		case "train":
			args = args[1:]
		case "help":
			args = []string{"--help"}
		default:
			fmt.Fprintf(stderr, "train: unknown command %q; commands: train (default), gen-data, bench, bench-data, bench-step, bench-dist, eval; see `train --help`\n", args[0])
			return 2
		}
	}
	return trainCmd(args, stdout, stderr)
}

func trainCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported below, with a hint
	cfgPath := fs.String("config", "", "YAML config file; without one, the built-in configs/"+configs.Default)
	overrides := config.BindFlags(fs)
	fs.Usage = func() {} // on a bad flag, say what is wrong and not all 40 settings
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(fs, stdout)
			return 0
		}
		fmt.Fprintf(stderr, "train: %s\n", flagHint(err, fs))
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "train: unexpected argument %q; settings are flags (--key=value)\n", fs.Arg(0))
		return 2
	}
	cfg, err := loadConfig(*cfgPath)
	if err == nil {
		err = cfg.Apply(*overrides)
	}
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "train: %v\n", err)
		return 2
	}

	comm, err := openComm(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "train: %v\n", err)
		return 1
	}
	ctx, stop := interruptContext(stderr)
	defer stop()
	opt := trainer.Options{Out: stdout, Comm: comm}
	if comm.Rank() != 0 {
		stdout = io.Discard // rank 0 speaks for the run
	}
	if cfg.Train.Trace != "" && comm.Rank() == 0 {
		opt.Trace = trace.New(0)
		defer writeTrace(opt.Trace, cfg, stdout, stderr)
	}
	sum, err := trainer.Run(ctx, cfg, opt)
	if err != nil && comm.Size() > 1 {
		comm.Abort(err) // ends every rank, naming this one and why; does not return
	}
	if cerr := comm.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		var intr *trainer.InterruptedError
		if errors.As(err, &intr) {
			fmt.Fprintf(stderr, "train: %v\n", err)
			return 130
		}
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "train: interrupted before the first step; nothing to keep\n")
			return 130
		}
		fmt.Fprintf(stderr, "train: %v\n", err)
		return 1
	}
	if n := len(sum.Epochs); n > 0 {
		last := sum.Epochs[n-1]
		fmt.Fprintf(stdout, "done: val top-1 %.1f%%, top-5 %.1f%%; run folder %s (metrics.jsonl, config.yaml, checkpoints/)\n",
			100*last.ValTop1, 100*last.ValTop5, sum.RunDir)
	} else {
		fmt.Fprintf(stdout, "done: nothing to train, the checkpoint already has %d epochs\n", cfg.Train.Epochs)
	}
	return 0
}

// writeTrace saves the run's timeline, also when the run failed or was
// interrupted (which is when a timeline is often most wanted).
func writeTrace(tr *trace.Recorder, cfg config.Config, stdout, stderr io.Writer) {
	path := cfg.Train.Trace
	if !filepath.IsAbs(path) {
		path = filepath.Join(cfg.Train.Out, path)
	}
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = tr.WriteFile(path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "train: trace: %v\n", err)
		return
	}
	fmt.Fprintf(stdout, "timeline written to %s (open it in https://ui.perfetto.dev)\n", path)
}

// loadConfig reads path, or the built-in quickstart when path is empty.
func loadConfig(path string) (config.Config, error) {
	if path == "" {
		b, err := configs.FS.ReadFile(configs.Default)
		if err != nil {
			return config.Config{}, err
		}
		return config.Parse(b, "built-in configs/"+configs.Default)
	}
	return config.Load(path)
}

// interruptContext is cancelled by the first SIGINT or SIGTERM, so the run
// stops at a clean point; a second one exits at once.
func interruptContext(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		if _, ok := <-sig; !ok {
			return
		}
		fmt.Fprintln(stderr, "\ntrain: stopping at the next clean point (interrupt again to exit at once)")
		cancel()
		if _, ok := <-sig; ok {
			fmt.Fprintln(stderr, "train: exiting now")
			os.Exit(130)
		}
	}()
	return ctx, func() { signal.Stop(sig); close(sig); cancel() }
}

// flagHint adds to the flag package's error the nearest defined flag, for
// a misspelt one, and where to find the list.
func flagHint(err error, fs *flag.FlagSet) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.Index(rest, ": "); i >= 0 {
			msg = rest[i+2:] // the setting's own message names the value and the field
		}
	}
	const undefined = "flag provided but not defined: -"
	if name, ok := strings.CutPrefix(msg, undefined); ok {
		msg = fmt.Sprintf("unknown flag --%s", name)
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if near := config.Nearest(name, names); near != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", near)
		}
	}
	return msg + "; `train --help` lists every setting"
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, `Usage:
  train [--config FILE] [--key=value ...]    train a classifier
  train gen-data --out DIR [options]         write a synthetic JPEG dataset (train gen-data --help)
  train bench [--config configs/blog.yaml]   the "3 lines, ~5x" experiment side by side (train bench --help)
  train eval --checkpoint RUN [--data DIR]   a checkpoint's loss and accuracy on a validation split
  train bench-data --config FILE             the loader alone: img/s per worker count, µs per stage
  train bench-step --config FILE             the model alone: ms per training step, peak RSS

Without --config, train runs the built-in quickstart (configs/quickstart.yaml):
a small CNN on a generated 10-class dataset, made on first use in ~/.cache/stoke.

Every setting of the config file is also a flag, --section.key=value, applied
over the file; the common ones have short forms. Lists take "a,b"; conv blocks
take YAML, e.g. --model.conv='[{channels: 16, kernel: 3, pool: true}]'.

  --config FILE
        YAML config file
`)
	shown, err := loadConfig("")
	if err != nil {
		shown = config.Default()
	}
	for _, f := range shown.Fields() {
		name := "--" + f.Path
		if f.Short != "" {
			name += ", --" + f.Short
		}
		fmt.Fprintf(w, "  %s %s   (quickstart: %s)\n        %s\n", name, f.Type, f.String(), f.Help)
	}
}
