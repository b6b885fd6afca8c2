package trainer

import (
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
	if _, err := data.EnsureSynthetic(dir, opt); err != nil {
		return "", fmt.Errorf("synthetic dataset: %w", err)
	}
	return dir, nil
}

// openDataset resolves d's dataset folder (generating it if need be) and
// scans it.
func openDataset(d config.Data, out io.Writer) (root string, train, val *data.Index, err error) {
	if root, err = DatasetRoot(d, out); err != nil {
		return "", nil, nil, err
	}
	train, val, err = data.Scan(root)
	return root, train, val, err
}
