package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"stoke/trainer"
)

// predictCmd is `train predict`: a checkpoint's top classes for image files.
func predictCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("checkpoint", "", "a run folder (its latest checkpoint; RUN/best for the best) or a checkpoint folder")
	k := fs.Int("top", 5, "classes to show per image")
	asJSON := fs.Bool("json", false, "one JSON object per image: file, top [{class, prob}]")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: train predict --checkpoint RUN [--top 5] [--json] FILES...\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *from == "" || fs.NArg() == 0 || *k < 1 {
		fmt.Fprintln(stderr, "train predict: --checkpoint RUN and at least one image file are required (--top >= 1)")
		return 2
	}
	preds, err := trainer.Predict(*from, fs.Args(), *k)
	if err != nil {
		fmt.Fprintf(stderr, "train predict: %v\n", err)
		return 1
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
