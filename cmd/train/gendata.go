package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"stoke/data"
)

// genData is `train gen-data`: a deterministic synthetic ImageFolder.
func genData(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen-data", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "folder to create (must not exist, or be empty); gets train/<class>/ and val/<class>/")
	classes := fs.Int("classes", 10, "number of classes")
	ntrain := fs.Int("train", 200, "training images per class")
	nval := fs.Int("val", 50, "validation images per class")
	size := fs.Int("size", 256, "image side in pixels")
	seed := fs.Uint64("seed", 1, "seed: the same options and seed give the same files, byte for byte")
	quality := fs.Int("quality", 90, "JPEG quality, 1-100")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: train gen-data --out DIR [options]\n\nWrites a synthetic JPEG dataset whose classes (shape, colour, texture) a small CNN can learn.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *out == "" {
		fmt.Fprintln(stderr, "train gen-data: --out is required: the folder to write the dataset into")
		return 2
	}
	t0 := time.Now()
	opt := data.SynthOptions{Classes: *classes, Train: *ntrain, Val: *nval, Size: *size, Seed: *seed, Quality: *quality}
	ctx, stop := interruptContext(stderr)
	defer stop()
	if err := data.GenerateContext(ctx, *out, opt); err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "train gen-data: interrupted; nothing written to %s\n", *out)
			return 130
		}
		fmt.Fprintf(stderr, "train gen-data: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %d classes x (%d train + %d val) images of %d px to %s in %.1fs\n",
		*classes, *ntrain, *nval, *size, *out, time.Since(t0).Seconds())
	return 0
}
