package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"stoke/data"
)

// genData is `train gen-data`: a deterministic synthetic ImageFolder.
func genData(args []string, stdout, stderr io.Writer) int {
	c := newSubcommand("gen-data", "Usage: train gen-data --out DIR [options]\n\nWrites a synthetic JPEG dataset whose classes (shape, colour, texture) a small CNN can learn.\n\n", stderr)
	out := c.String("out", "", "folder to create (must not exist, or be empty); gets train/<class>/ and val/<class>/")
	classes := c.Int("classes", 10, fmt.Sprintf("number of classes, 2..%d", data.MaxSynthClasses))
	ntrain := c.Int("train", 200, "training images per class")
	nval := c.Int("val", 50, "validation images per class")
	size := c.Int("size", 256, "image side in pixels, 16..4096")
	seed := c.Uint64("seed", 1, "seed: the same options and seed give the same files, byte for byte")
	quality := c.Int("quality", data.DefaultSynthQuality, "JPEG quality, 1-100")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *out == "" {
		return c.fail(2, "--out is required: the folder to write the dataset into")
	}
	opt := data.SynthOptions{Classes: *classes, Train: *ntrain, Val: *nval, Size: *size, Seed: *seed, Quality: *quality}
	var fe *data.SynthFieldError
	if err := opt.Check(); errors.As(err, &fe) {
		return c.badValue(fe.Field, fe.Value, fe.Want)
	}
	fmt.Fprintf(stdout, "generating %d classes x (%d train + %d val) images of %d px in %s...\n", *classes, *ntrain, *nval, *size, *out)
	t0 := time.Now()
	ctx, stop := interruptContext(stderr)
	defer stop()
	if err := data.GenerateContext(ctx, *out, opt); err != nil {
		if errors.Is(err, context.Canceled) {
			return c.fail(130, "interrupted; nothing written to %s", *out)
		}
		return c.fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "wrote %d classes x (%d train + %d val) images of %d px to %s in %.1fs\n",
		*classes, *ntrain, *nval, *size, *out, time.Since(t0).Seconds())
	return 0
}
