package main

import (
	"context"
	"errors"
	"io"

	"stoke/bench"
	"stoke/data"
	"stoke/trainer"
)

// benchData is `train bench-data`: the loader alone, no model (bench.Data
// says what each figure is).
func benchData(args []string, stdout, stderr io.Writer) int {
	c := newSubcommand("bench-data", "Usage: train bench-data --config FILE [--data DIR] [--image-size N] [--json]\n\nMeasures the data loader alone: img/s for each worker count, and µs/image per stage, beside the CPU\nand how busy the machine was (load, CPU time, other processes' cores).\n\n", stderr)
	cfgPath := c.String("config", "", "YAML config file or shipped config name (data.* and augment.* are used); without one, the built-in quickstart")
	dir := c.String("data", "", "ImageFolder dataset or tar shards (its train split is read); default data.root, or when that is empty the generated dataset train uses")
	size := c.Int("image-size", 0, "output side in pixels; default data.image_size")
	asJSON := c.Bool("json", false, "one JSON object per line")
	workers := c.intList("workers", "", "comma-separated worker counts; default 0,1,...,NumCPU", 0)
	images := c.Int("images", 2048, "images per measurement (after one warm-up batch)")
	dtype := c.String("dtype", data.DTypeFloat32, "batch element type: float32 or uint8")
	decoder := c.String("decoder", data.DecoderAuto, "JPEG decoder: auto, turbo or go")
	noScale := c.Bool("no-dct-scale", false, "decode JPEGs at full size even where a reduced DCT scale would do")
	stages := c.Bool("stages", true, "measure the per-stage costs")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *images < 1 {
		return c.badValue("images", *images, "at least 1")
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return c.fail(2, "%v", err)
	}
	if *dir != "" {
		cfg.Data.Root = *dir
	}
	if *size > 0 {
		cfg.Data.ImageSize = *size
	}
	if err := cfg.Validate(); err != nil {
		return c.fail(2, "%v", err)
	}
	if cfg.Data.Root == "" { // the generated dataset, as train uses it (made on first use)
		note := stdout
		if *asJSON {
			note = stderr // stdout holds JSON lines only
		}
		ctx, stop := interruptContext(stderr)
		root, err := trainer.DatasetRootContext(ctx, cfg.Data, note)
		stop()
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return c.fail(130, "interrupted while generating the dataset; nothing kept")
			}
			return c.fail(1, "%v", err)
		}
		cfg.Data.Root = root
	}
	err = bench.Data(bench.DataOptions{Config: cfg, Workers: *workers, Images: *images, DType: *dtype, Decoder: *decoder,
		NoDCTScale: *noScale, Stages: *stages, JSON: *asJSON}, stdout)
	if err != nil {
		return c.fail(1, "%v", err)
	}
	return 0
}
