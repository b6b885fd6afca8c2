package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"stoke/trainer"
)

// evalCmd is `train eval`: a checkpoint's loss and accuracy on a
// validation split.
func evalCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("checkpoint", "", "a run folder (its latest checkpoint) or a checkpoint folder")
	data := fs.String("data", "", "dataset folder whose val/ split to use; empty = the one the checkpoint was trained on")
	asJSON := fs.Bool("json", false, "print one JSON object")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: train eval --checkpoint RUN [--data DIR] [--json]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *from == "" {
		fmt.Fprintln(stderr, "train eval: --checkpoint is required: a run folder or a checkpoint folder")
		return 2
	}
	ctx, stop := interruptContext(stderr)
	defer stop()
	rep, err := trainer.Evaluate(ctx, *from, *data, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "train eval: %v\n", err)
		return 1
	}
	if *asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	fmt.Fprintf(stdout, "%s: %d images, loss %.4f, top-1 %.2f%%, top-5 %.2f%%\n", rep.Checkpoint, rep.Images, rep.Loss, 100*rep.Top1, 100*rep.Top5)
	return 0
}
