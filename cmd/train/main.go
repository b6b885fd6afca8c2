// Command train trains an image classifier with stoke.
//
//	train [--config FILE] [--key=value ...]   train (the quickstart when no config is given)
//	train gen-data --out DIR [options]        write a synthetic JPEG ImageFolder dataset
//	train pack --data ROOT --out DIR          an ImageFolder as tar shards (WebDataset layout)
//	train bench [--config FILE] [options]     the "3 lines, ~5x" experiment side by side
//	train eval --checkpoint RUN               a checkpoint's accuracy on a validation split
//	train predict --checkpoint RUN FILES...   a checkpoint's top classes for image files
//	train bench-data --config FILE            the loader alone: img/s per worker count, µs per stage
//	train bench-step --config FILE            the model alone: ms per training step, peak RSS
//	train bench-dist [--ranks 1,2]            data parallel: img/s on 1 and N ranks, allreduce time, overlap
//
// Run `train --help` for every setting (the list of subcommands there is
// the table commands in main.go, which this comment must match:
// TestHelpListsEveryCommandAndConfig checks both).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"stoke/config"
	"stoke/configs"
	"stoke/dist"
	"stoke/trace"
	"stoke/trainer"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// subcommandEntry is one `train NAME`.
type subcommandEntry struct {
	name, args, help string // as --help lists them: "train NAME ARGS   HELP"
	run              func(args []string, stdout, stderr io.Writer) int
	hidden           bool // run by another command, not by hand
}

// commands are train's subcommands, in the order --help lists them; run
// dispatches on the same table, so --help cannot miss one.
var commands = []subcommandEntry{
	{name: "gen-data", args: "--out DIR [options]", help: "write a synthetic JPEG dataset", run: genData},
	{name: "pack", args: "--data ROOT --out DIR", help: "an ImageFolder as tar shards (WebDataset layout), read by --data DIR", run: packCmd},
	{name: "bench", args: "[--config configs/blog.yaml]", help: `the "3 lines, ~5x" experiment side by side`, run: benchCmd},
	{name: "eval", args: "--checkpoint RUN [--data DIR]", help: "a checkpoint's loss and accuracy on a validation split", run: evalCmd},
	{name: "predict", args: "--checkpoint RUN FILES...", help: "a checkpoint's top classes for image files (--top K, --json)", run: predictCmd},
	{name: "bench-data", args: "--config FILE", help: "the loader alone: img/s per worker count, µs per stage", run: benchData},
	{name: "bench-step", args: "--config FILE", help: "the model alone: ms per training step, peak RSS", run: benchStep},
	{name: "bench-dist", args: "[--ranks 1,2]", help: "data parallel: img/s on 1 and N ranks, allreduce time, overlap", run: benchDist},
	{name: "bench-allreduce", run: benchAllreduce, hidden: true}, // run by bench-dist under mpirun
}

// run is main without the exit, for tests: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "train":
			args = args[1:]
		case "help":
			args = []string{"--help"}
		default:
			for _, c := range commands {
				if c.name == args[0] {
					return c.run(args[1:], stdout, stderr)
				}
			}
			names := []string{"train (default)"}
			for _, c := range commands {
				if !c.hidden {
					names = append(names, c.name)
				}
			}
			fmt.Fprintf(stderr, "train: unknown command %q; commands: %s; see `train --help`\n", args[0], strings.Join(names, ", "))
			return 2
		}
	}
	return trainCmd(args, stdout, stderr)
}

func trainCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported below, with a hint
	cfgPath := fs.String("config", "", "YAML config file, or the name of a shipped one ("+strings.Join(configs.Names(), ", ")+"); without one, the built-in configs/"+configs.Default)
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
	cfg, err := runConfig(*cfgPath, *overrides, stdout)
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
	keepTrace := true
	if cfg.Train.Trace != "" && comm.Rank() == 0 {
		opt.Trace = trace.New(0)
		defer func() {
			if keepTrace {
				writeTrace(opt.Trace, cfg, stdout, stderr)
			}
		}()
	}
	sum, err := trainer.Run(ctx, cfg, opt)
	if err != nil && comm.Size() > 1 {
		comm.Abort(err) // ends every rank, naming this one and why; does not return
	}
	if cerr := comm.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		var code int
		code, keepTrace = reportRunError(ctx, err, stderr)
		return code
	}
	if n := len(sum.Epochs); n > 0 {
		last := sum.Epochs[n-1]
		fmt.Fprintf(stdout, "done: val top-1 %.1f%%, top-5 %.1f%%; run folder %s (metrics.jsonl, config.yaml, checkpoints/)\n",
			100*last.ValTop1, 100*last.ValTop5, sum.RunDir)
	}
	return 0
}

// runConfig is the configuration a training run uses: the config file (or
// the built-in default), with the overrides applied, or the resumed run's
// own config when --resume (or the file's train.resume) names one;
// validated, checked against the machine's memory, and with its run
// folder moved to the next free one when needed (nextFreeOut).
func runConfig(cfgPath string, overrides []config.Override, stdout io.Writer) (config.Config, error) {
	cfg, err := loadConfig(cfgPath)
	if resume := resumeFlag(overrides, cfg); err == nil && resume != "" {
		var file *config.Config
		if cfgPath != "" {
			file = &cfg
		}
		cfg, err = resumeConfig(resume, file, cfgPath, overrides)
	} else if err == nil {
		err = cfg.Apply(overrides)
	}
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil {
		err = checkMemory(cfg)
	}
	if err == nil {
		nextFreeOut(&cfg, cfgPath, overrides, stdout)
	}
	return cfg, err
}

// reportRunError says why a training run failed and returns the exit code:
// 130 when interrupted, 1 otherwise. keepTrace is false only for a bare
// interrupt before the first step, which leaves nothing to keep.
func reportRunError(ctx context.Context, err error, stderr io.Writer) (code int, keepTrace bool) {
	var intr *trainer.InterruptedError
	if errors.As(err, &intr) {
		fmt.Fprintf(stderr, "train: %v\n", err)
		return 130, true
	}
	// Only a bare interrupt has nothing to keep; a checkpoint that could
	// not be written when interrupted is reported as the failure it is.
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "train: interrupted before the first step; nothing to keep\n")
		return 130, false // the trainer took back what it wrote (trainer.runFolder)
	}
	fmt.Fprintf(stderr, "train: %v\n", err)
	return 1, true
}

// resumeFlag is the run to continue: --resume's last value, else the
// config file's train.resume.
func resumeFlag(overrides []config.Override, file config.Config) string {
	resume := file.Train.Resume
	for _, o := range overrides {
		if o.Path == "train.resume" {
			resume = o.Value
		}
	}
	return resume
}

// resumeConfig is the config of `--resume RUN`: the run's own, with the
// command line over it, where the command line may change only what a
// resume may (config.ResumeChangeable). A config file given too must agree
// with the run on everything else; its changeable settings (train.out,
// data.workers, ...) are the run's. Every disagreement is listed at once.
func resumeConfig(resume string, file *config.Config, fileName string, overrides []config.Override) (config.Config, error) {
	base, run, err := trainer.ResumeBase(resume, launchRanks())
	if err != nil {
		return config.Config{}, err
	}
	var bad []string
	if file != nil {
		bad = config.ResumeMismatches(base, *file, "in "+fileName)
	}
	cfg := base
	cfg.Train.Out = run // unless --out says otherwise: the run goes on in its folder
	if err := cfg.Apply(overrides); err != nil {
		return config.Config{}, err
	}
	cfg.Train.Resume = resume
	bad = append(bad, config.ResumeMismatches(base, cfg, "on the command line")...)
	if len(bad) > 0 {
		return config.Config{}, fmt.Errorf("cannot resume %s: %d settings differ from the run's (its config is %s):\n  %s\na resume may change only %s; drop the others to continue the run, or start a new run with another --out",
			resume, len(bad), filepath.Join(run, "config.yaml"), strings.Join(bad, "\n  "), strings.Join(config.ResumeChangeableList(), ", "))
	}
	return cfg, nil
}

// launchRanks is the number of ranks this process was launched among (1
// without a launcher), read from the launcher's environment before any
// communicator opens; a resume compares the global batch with it.
func launchRanks() int {
	if l, err := dist.Detect(nil); err == nil && l.Size > 1 {
		return l.Size
	}
	return 1
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

// loadConfig reads path, or the built-in quickstart when path is empty. A
// path that is no file but names a shipped config ("quickstart",
// "blog.yaml", "configs/ref-cnn.yaml") reads the embedded copy, so the
// README's commands work from any folder.
func loadConfig(path string) (config.Config, error) {
	if path == "" {
		b, err := configs.FS.ReadFile(configs.Default)
		if err != nil {
			return config.Config{}, err
		}
		return config.Parse(b, "built-in configs/"+configs.Default)
	}
	_, statErr := os.Stat(path)
	if statErr == nil {
		return config.Load(path)
	}
	if file, text, ok := configs.Lookup(path); ok {
		return config.Parse(text, "built-in configs/"+file)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		return config.Config{}, fmt.Errorf("config %s: no such file, and no shipped config of that name (shipped: %s)", path, strings.Join(configs.Names(), ", "))
	}
	return config.Load(path)
}

// signalWindow is how close together signals count as one request: GNU
// timeout signals the child, then its whole process group, so a trainer
// run under it (or under another wrapper that does the same) gets the one
// SIGTERM twice within microseconds. A person's second Ctrl-C comes later.
const signalWindow = 200 * time.Millisecond

// interruptContext is cancelled by the first SIGINT, SIGTERM or SIGHUP (a
// closed terminal), so the run stops at a clean point; one arriving more
// than signalWindow after the first exits at once (status 130).
func interruptContext(stderr io.Writer) (context.Context, func()) {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	ctx, cancel := watchSignals(sig, stderr, func() { os.Exit(130) })
	return ctx, func() { signal.Stop(sig); close(sig); cancel() }
}

// watchSignals cancels the returned context at the first signal from sig,
// ignores those within signalWindow of it, and calls exitNow at the next.
// It returns when sig is closed.
func watchSignals(sig <-chan os.Signal, stderr io.Writer, exitNow func()) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		s, ok := <-sig
		if !ok {
			return
		}
		first := time.Now()
		l, _ := dist.Detect(nil)
		fmt.Fprintf(stderr, "\ntrain: %s\n", signalNote(s, l))
		cancel()
		for range sig {
			if time.Since(first) < signalWindow {
				continue // the same request, delivered twice
			}
			fmt.Fprintln(stderr, "train: exiting now")
			exitNow()
			return
		}
	}()
	return ctx, cancel
}

// signalNote is what the first signal prints. A rank of a job of several
// is signalled by its launcher, not by a person: mpirun ends every rank
// when one fails (that rank names its reason) or when the job itself is
// interrupted, and kills a rank that does not stop soon after.
func signalNote(s os.Signal, l dist.Launch) string {
	if l.Launcher != "" && l.Size > 1 {
		return fmt.Sprintf("rank %d of %d: %v by %s, which ends every rank when one fails (that rank's message says why) or the job is interrupted; stopping", l.Rank, l.Size, s, l.Launcher)
	}
	return fmt.Sprintf("%v: stopping at the next clean point (interrupt again to exit at once)", s)
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
	lines := [][2]string{{"train [--config FILE] [--key=value ...]", "train a classifier"}}
	for _, c := range commands {
		if !c.hidden {
			lines = append(lines, [2]string{"train " + c.name + " " + c.args, c.help})
		}
	}
	width := 0
	for _, l := range lines {
		width = max(width, utf8.RuneCountInString(l[0]))
	}
	fmt.Fprintln(w, "Usage:")
	for _, l := range lines {
		fmt.Fprintf(w, "  %-*s   %s\n", width, l[0], l[1])
	}
	fmt.Fprintf(w, `
Each command's own flags: train COMMAND -h.

Without --config, train runs the built-in quickstart (configs/%s):
a small CNN on a generated 10-class dataset, made on first use in ~/.cache/stoke.

Every setting of the config file is also a flag, --section.key=value, applied
over the file; the common ones have short forms. Lists take "a,b"; conv blocks
take YAML, e.g. --model.conv='[{channels: 16, kernel: 3, pool: true}]'.

  --config FILE
        YAML config file, or the name of a shipped config, embedded and found from any
        folder: %s. Settings it leaves out have
        the values shown below as "quickstart", the one set of defaults
`, configs.Default, strings.Join(configs.Names(), ", "))
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
