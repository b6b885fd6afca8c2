package trainer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"stoke/config"
	"stoke/data"
)

// DatasetRoot returns the dataset folder of d: data.root when set (which
// must exist), or else the generated dataset that data.synthetic describes,
// made on first use in the cache folder.
func DatasetRoot(d config.Data, out io.Writer) (string, error) {
	return DatasetRootContext(context.Background(), d, out)
}

// DatasetRootContext is DatasetRoot with a generation that ctx stops: on
// an interrupt the half-made dataset is removed and ctx's error returned.
func DatasetRootContext(ctx context.Context, d config.Data, out io.Writer) (string, error) {
	if d.Root != "" {
		if _, err := os.Stat(d.Root); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("data.root: dataset folder %s does not exist; point --data at an ImageFolder (ROOT/train/<class>/*.jpg, ROOT/val/<class>/*.jpg), or make a demo set with `train gen-data --out %s`, or leave data.root empty to use the generated one", d.Root, d.Root)
			}
			return "", fmt.Errorf("data.root: %w", err)
		}
		return d.Root, nil
	}
	cache := d.CacheDir
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("data.cache_dir: no user cache folder (%v); set data.cache_dir", err)
		}
		cache = filepath.Join(base, "stoke")
	}
	s := d.Synthetic
	dir := filepath.Join(cache, fmt.Sprintf("synthetic-c%d-train%d-val%d-px%d-seed%d", s.Classes, s.Train, s.Val, s.Size, s.Seed))
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("data.cache_dir: %w", err)
	}
	opt := data.SynthOptions{Classes: s.Classes, Train: s.Train, Val: s.Val, Size: s.Size, Seed: s.Seed}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "generating the synthetic dataset in %s (%d classes, %d+%d images per class, %d px)...\n", dir, s.Classes, s.Train, s.Val, s.Size)
	}
	if _, err := data.EnsureSyntheticContext(ctx, dir, opt); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return "", err
		}
		return "", fmt.Errorf("synthetic dataset: %w", err)
	}
	return dir, nil
}

// openDataset resolves d's dataset folder (generating it if need be) and
// scans it. ctx stops it: the generation at once, the scan by no longer
// waiting for it (data.Scan takes no context; it ends on its own and its
// result is dropped), so an interrupt during set-up is answered promptly.
func openDataset(ctx context.Context, d config.Data, out io.Writer) (root string, train, val *data.Index, err error) {
	if root, err = DatasetRootContext(ctx, d, out); err != nil {
		return "", nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return "", nil, nil, err
	}
	type scanned struct {
		train, val *data.Index
		err        error
	}
	done := make(chan scanned, 1)
	go func() {
		t, v, err := data.ScanWith(root, data.ScanOptions{Format: d.Format, SkipBadShards: d.BadImages == "skip"})
		done <- scanned{t, v, err}
	}()
	select {
	case r := <-done:
		if r.err == nil {
			skippedMembers(out, r.train, r.val)
		}
		return root, r.train, r.val, r.err
	case <-ctx.Done():
		return "", nil, nil, ctx.Err()
	}
}

// skippedMembers prints the broken shard members a scan left out
// (data.bad_images: skip), a few by name.
func skippedMembers(out io.Writer, sets ...*data.Index) {
	var all []string
	for _, ix := range sets {
		all = append(all, ix.SkippedMembers...)
	}
	if len(all) == 0 {
		return
	}
	fmt.Fprintf(out, "bad_images skip: %s left out:\n", plural(len(all), "broken shard member"))
	for i, m := range all {
		if i == 5 {
			fmt.Fprintf(out, "  ... and %d more\n", len(all)-i)
			break
		}
		fmt.Fprintf(out, "  %s\n", m)
	}
}
