package main

import (
	"encoding/json"
	"fmt"
	"io"

	"stoke/trainer"
)

// evalCmd is `train eval`: a checkpoint's loss and accuracy on a
// validation split.
func evalCmd(args []string, stdout, stderr io.Writer) int {
	c := newSubcommand("eval", "Usage: train eval --checkpoint RUN [--data DIR] [--device cpu|cuda] [--json]\n\n", stderr)
	from := c.String("checkpoint", "", "a run folder (its latest checkpoint) or a checkpoint folder")
	data := c.String("data", "", "dataset folder whose val/ split to use; empty = the one the checkpoint was trained on")
	device := c.String("device", "", "cpu or cuda; empty = the checkpoint's train.device where this machine has it, else cpu")
	asJSON := c.Bool("json", false, "print one JSON object")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *from == "" {
		return c.fail(2, "--checkpoint is required: a run folder or a checkpoint folder")
	}
	if *device != "" && *device != "cpu" && *device != "cuda" {
		return c.badValue("device", *device, "cpu or cuda (empty: the checkpoint's device where this machine has it, else cpu)")
	}
	ctx, stop := interruptContext(stderr)
	defer stop()
	rep, err := trainer.Evaluate(ctx, *from, *data, *device, stderr)
	if err != nil {
		return c.fail(1, "%v", err)
	}
	if *asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	fmt.Fprintf(stdout, "%s: %d images, loss %.4f, top-1 %.2f%%, top-5 %.2f%%\n", rep.Checkpoint, rep.Images, rep.Loss, 100*rep.Top1, 100*rep.Top5)
	return 0
}
