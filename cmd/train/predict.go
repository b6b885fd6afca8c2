package main

import (
	"encoding/json"
	"fmt"
	"io"

	"stoke/trainer"
)

// predictCmd is `train predict`: a checkpoint's top classes for image files.
func predictCmd(args []string, stdout, stderr io.Writer) int {
	c := newSubcommand("predict", "Usage: train predict --checkpoint RUN [--top 5] [--json] FILES...\n\n", stderr)
	c.takesArgs = true // the image files
	from := c.String("checkpoint", "", "a run folder (its latest checkpoint; RUN/best for the best) or a checkpoint folder")
	k := c.Int("top", 5, "classes to show per image")
	asJSON := c.Bool("json", false, "one JSON object per image: file, top [{class, prob}]")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *from == "" || c.NArg() == 0 {
		return c.fail(2, "--checkpoint RUN and at least one image file are required")
	}
	if *k < 1 {
		return c.badValue("top", *k, "at least 1")
	}
	preds, err := trainer.Predict(*from, c.Args(), *k)
	if err != nil {
		return c.fail(1, "%v", err)
	}
	for _, p := range preds {
		if *asJSON {
			b, _ := json.Marshal(p)
			fmt.Fprintln(stdout, string(b))
			continue
		}
		fmt.Fprintf(stdout, "%s:", p.File)
		for _, c := range p.Classes {
			fmt.Fprintf(stdout, "  %s %.1f%%", c.Class, 100*c.Prob)
		}
		fmt.Fprintln(stdout)
	}
	return 0
}
