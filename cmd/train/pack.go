package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"stoke/data"
)

// packCmd is `train pack`: an ImageFolder written as tar shards in the
// WebDataset layout (docs/shards.md), which --data then reads.
func packCmd(args []string, stdout, stderr io.Writer) int {
	c := newSubcommand("pack", "Usage: train pack --data ROOT --out DIR [--shard-size BYTES]\n\nWrites the ImageFolder ROOT as tar shards in the WebDataset layout: DIR/train/*.tar and DIR/val/*.tar\n(members KEY.jpg or KEY.png, the original bytes, and KEY.cls, the class index), an index of member\noffsets beside each shard (NAME.tar.idx) and DIR/classes.txt. `train --data DIR` reads them, in the\nImageFolder's sample order: the same seed gives the same batches. See docs/shards.md.\n\n", stderr)
	root := c.String("data", "", "the ImageFolder to pack (ROOT/train/<class>/*.jpg, ROOT/val/<class>/*.jpg)")
	out := c.String("out", "", "folder to write the shards into (must not exist, or be empty; not inside --data)")
	size := c.Int64("shard-size", data.DefaultShardBytes, "bytes per shard, at most (a shard holds at least one image)")
	if code, ok := c.parse(args); !ok {
		return code
	}
	switch {
	case *root == "":
		return c.fail(2, "--data is required: the ImageFolder to pack")
	case *out == "":
		return c.fail(2, "--out is required: the folder to write the shards into")
	case *size < 1<<10:
		return c.badValue("shard-size", fmt.Sprint(*size), "bytes per shard, at least 1024 (the default is about 1 GB)")
	}
	train, val, err := data.Scan(*root)
	if err != nil {
		return c.fail(1, "%v", err)
	}
	if train.Shards != nil {
		return c.fail(1, "--data %s is already a shard set (train/*.tar): train reads it as it is", *root)
	}
	t0 := time.Now()
	ctx, stop := interruptContext(stderr)
	defer stop()
	st, err := data.Pack(ctx, train, val, *out, *size)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return c.fail(130, "interrupted; the shards written to %s were removed", *out)
		}
		return c.fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "packed %d classes, %d train images into %d shards (%d bytes) and %d val images into %d shards (%d bytes), in %s, in %.1fs\n",
		len(train.Classes), st.Samples[0], st.Shards[0], st.Bytes[0], st.Samples[1], st.Shards[1], st.Bytes[1], *out, time.Since(t0).Seconds())
	return 0
}
