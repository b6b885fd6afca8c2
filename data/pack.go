package data

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultShardBytes is the shard size Pack aims at: about 1 GB, the size
// WebDataset's documentation recommends (large sequential reads, few files).
const DefaultShardBytes = 1 << 30

// PackStats is what Pack wrote.
type PackStats struct {
	Shards  [2]int   // train, val
	Samples [2]int   // train, val
	Bytes   [2]int64 // of the .tar files
}

// Pack writes the ImageFolder splits train and val (as Scan returns them)
// as tar shards in the WebDataset layout under out: out/train/NNNNNN.tar
// and out/val/NNNNNN.tar, each with its index NNNNNN.tar.idx, and
// out/classes.txt. Sample i of a split is member KEY.jpg (or .png: the
// original bytes, not re-encoded) and KEY.cls, KEY its index i in 8 or
// more digits, so a shard set lists its samples in the order of the
// ImageFolder's Index and trains bit-identically to it. A shard is closed
// before it would pass shardBytes (a sample larger than that gets a shard
// of its own). out must be empty or absent, and outside train's root;
// on an error or when ctx ends, Pack removes what it wrote.
func Pack(ctx context.Context, train, val *Index, out string, shardBytes int64) (st PackStats, err error) {
	if shardBytes <= 0 {
		return st, fmt.Errorf("data: shard size %d bytes: must be > 0", shardBytes)
	}
	created, err := packTarget(filepath.Dir(train.Root), out)
	if err != nil {
		return st, err
	}
	defer func() {
		if err != nil { // take back what was written
			if created {
				os.RemoveAll(out)
			} else {
				for _, name := range []string{"train", "val", "classes.txt"} {
					os.RemoveAll(filepath.Join(out, name))
				}
			}
		}
	}()
	if err := os.WriteFile(filepath.Join(out, "classes.txt"), []byte(strings.Join(train.Classes, "\n")+"\n"), 0o644); err != nil {
		return st, fmt.Errorf("data: %w", err)
	}
	for i, ix := range []*Index{train, val} {
		p := &packer{ctx: ctx, dir: filepath.Join(out, filepath.Base(ix.Root)), limit: shardBytes}
		defer p.abort()
		if err := os.Mkdir(p.dir, 0o755); err != nil {
			return st, fmt.Errorf("data: %w", err)
		}
		for k, s := range ix.Samples {
			if err := p.add(k, s); err != nil {
				return st, err
			}
		}
		if err := p.finish(); err != nil {
			return st, err
		}
		st.Shards[i], st.Samples[i], st.Bytes[i] = p.shards, len(ix.Samples), p.bytes
	}
	return st, nil
}

// packTarget checks out for Pack: empty or absent (then made), and not
// inside the dataset folder root. created says Pack made it.
func packTarget(root, out string) (created bool, err error) {
	absRoot, err := realAbs(root)
	if err != nil {
		return false, fmt.Errorf("data: dataset folder %w", err)
	}
	absOut, err := realAbs(out)
	if err != nil {
		return false, fmt.Errorf("data: --out %w", err)
	}
	if rel, err := filepath.Rel(absRoot, absOut); err == nil && (rel == "." || filepath.IsLocal(rel)) {
		where := "inside the dataset folder"
		if rel == "." {
			where = "the dataset folder"
		}
		return false, fmt.Errorf("data: --out %s is %s %s: nothing is written into the data being packed; choose a folder outside it", out, where, root)
	}
	entries, err := os.ReadDir(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(out, 0o755); err != nil {
			return false, fmt.Errorf("data: --out: %w", err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("data: --out: %w", err)
	case len(entries) > 0:
		return false, fmt.Errorf("data: --out %s is not empty (it holds %q): choose a new or empty folder, so that no file is overwritten or mixed in", out, entries[0].Name())
	}
	return false, nil
}

// realAbs is the absolute path of p with its symlinks resolved, as far as
// p exists (a folder still to be made is joined to its existing parent).
func realAbs(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			return filepath.Join(real, rest), nil
		}
		parent := filepath.Dir(abs)
		if parent == abs {
			return filepath.Join(abs, rest), nil
		}
		rest = filepath.Join(filepath.Base(abs), rest)
		abs = parent
	}
}

// packer writes one split's shards, one after the other.
type packer struct {
	ctx    context.Context
	dir    string
	limit  int64
	f      *os.File
	bw     *bufio.Writer
	cw     countWriter
	tw     *tar.Writer
	index  shardIndex
	shards int
	bytes  int64
}

// countWriter counts what passes through it: the tar writer writes a
// member's header before its data, so the count after WriteHeader is the
// offset of the member's first byte.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// packTime is every member's modification time, so that the same dataset
// packs to the same bytes.
var packTime = time.Unix(0, 0)

// add writes sample k (whose image is s.Path) as KEY.ext and KEY.cls.
func (p *packer) add(k int, s Sample) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	img, err := os.ReadFile(s.Path)
	if err != nil {
		return fmt.Errorf("data: reading image %w", err)
	}
	key := fmt.Sprintf("%08d", k)
	ext := ".jpg"
	if strings.EqualFold(filepath.Ext(s.Path), ".png") {
		ext = ".png"
	}
	cls := []byte(strconv.Itoa(s.Label))
	need := 512 + blocks(len(img)) + 512 + blocks(len(cls)) + 1024 // two headers, the padded data, the end of the archive
	if p.tw != nil && p.cw.n+need > p.limit {
		if err := p.closeShard(); err != nil {
			return err
		}
	}
	if p.tw == nil {
		if err := p.openShard(); err != nil {
			return err
		}
	}
	name := key + ext
	if err := p.member(name, img); err != nil {
		return err
	}
	p.index.Samples = append(p.index.Samples, shardIndexSample{Name: name, Offset: p.cw.n - int64(len(img)), Size: int64(len(img)), Label: s.Label})
	return p.member(key+".cls", cls)
}

// member writes one regular-file member.
func (p *packer) member(name string, b []byte) error {
	h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: packTime, Format: tar.FormatUSTAR}
	if err := p.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("data: shard %s: %w", p.f.Name(), err)
	}
	if _, err := p.tw.Write(b); err != nil {
		return fmt.Errorf("data: shard %s: %w", p.f.Name(), err)
	}
	return nil
}

func (p *packer) openShard() error {
	f, err := os.OpenFile(filepath.Join(p.dir, fmt.Sprintf("%06d.tar", p.shards)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	p.f = f
	p.bw = bufio.NewWriterSize(f, 1<<20)
	p.cw = countWriter{w: p.bw}
	p.tw = tar.NewWriter(&p.cw)
	p.index = shardIndex{Format: shardIndexFormat}
	return nil
}

// closeShard ends the shard's tar, then writes its index beside it (after
// it, so that the index is newer than its shard).
func (p *packer) closeShard() error {
	name := p.f.Name()
	err := p.tw.Close()
	if err == nil {
		err = p.bw.Flush()
	}
	if err == nil {
		err = p.f.Sync()
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("data: shard %s: %w", name, err)
	}
	p.index.ShardBytes = p.cw.n
	b, err := json.Marshal(p.index)
	if err != nil {
		return fmt.Errorf("data: shard index of %s: %w", name, err)
	}
	if err := os.WriteFile(name+ShardIndexSuffix, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("data: shard index %w", err)
	}
	p.shards++
	p.bytes += p.cw.n
	p.tw, p.f = nil, nil
	return nil
}

// blocks is n bytes of member data padded to tar's 512-byte blocks.
func blocks(n int) int64 { return (int64(n) + 511) / 512 * 512 }

// abort closes a shard left open by an error (Pack then removes it).
func (p *packer) abort() {
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
}

func (p *packer) finish() error {
	if p.tw == nil {
		return nil
	}
	return p.closeShard()
}
