package data

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Tar shards in the WebDataset layout (docs/shards.md):
//
//	root/train/*.tar   members KEY.jpg (or .jpeg, .png) and KEY.cls (the class index, ASCII)
//	root/val/*.tar
//	root/classes.txt   the class names, one a line, in index order (optional)
//	root/*/NAME.tar.idx  the member offsets of NAME.tar, written by `train pack` (optional)
//
// A member's key is its name up to the first dot of its last path element,
// and its extension the rest, as WebDataset splits them: "a/b.seg.png" is
// key "a/b", extension "seg.png". Extensions other than the image ones and
// "cls" are ignored. Samples are in shard order (shards sorted by name),
// then in the order their image member comes in the shard.

// ErrShard marks a tar shard that cannot be read as samples: truncated, a
// member without its class, a class that is no class index, a member name
// that leaves the shard's folder. The error names the shard and member.
var ErrShard = errors.New("not a usable tar shard")

// Shard is one tar file of a split.
type Shard struct {
	Path string // root/split/NAME.tar
	Size int64  // its size in bytes when scanned
}

// Member locates a sample's image inside a shard: Index.Shards[Shard],
// bytes [Offset, Offset+Size).
type Member struct {
	Shard        int
	Offset, Size int64
}

// ShardIndexSuffix ends the name of a shard's index file, beside it.
const ShardIndexSuffix = ".idx"

// shardIndex is the JSON of NAME.tar.idx (docs/shards.md).
type shardIndex struct {
	Format     string             `json:"format"` // shardIndexFormat
	ShardBytes int64              `json:"shard_bytes"`
	Samples    []shardIndexSample `json:"samples"`
}

type shardIndexSample struct {
	Name   string `json:"name"` // the image member
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	Label  int    `json:"label"`
}

const shardIndexFormat = "stoke-shard-index-1"

// isShardSet reports whether root/train holds .tar files and no class
// folders: a shard set, not an ImageFolder. Both at once is an error.
func isShardSet(root string) (bool, error) {
	dir := filepath.Join(root, "train")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, nil // Scan says what is missing
	}
	var tars, folders int
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
		case strings.HasSuffix(name, ".tar") && !e.IsDir():
			tars++
		case e.IsDir() || e.Type()&fs.ModeSymlink != 0:
			folders++
		}
	}
	if tars > 0 && folders > 0 {
		return false, fmt.Errorf("data: %s holds both .tar shards (%d) and class folders (%d): say which it is with data.format (folder or shards), or move one kind elsewhere: %w", dir, tars, folders, ErrLayout)
	}
	return tars > 0, nil
}

// scanShards reads the shard set under root (Scan's caller has seen
// root/train/*.tar). It writes nothing: a shard without a valid index file
// is scanned, header by header, and its index kept in memory.
func scanShards(root string, opt ScanOptions) (train, val *Index, err error) {
	classes, err := readClasses(filepath.Join(root, "classes.txt"))
	if err != nil {
		return nil, nil, err
	}
	var idx [2]*Index
	maxLabel := -1
	for i, split := range []string{"train", "val"} {
		ix, err := scanShardSplit(filepath.Join(root, split), classes, opt.SkipBadShards)
		if err != nil {
			return nil, nil, err
		}
		for _, s := range ix.Samples {
			maxLabel = max(maxLabel, s.Label)
		}
		idx[i] = ix
	}
	if classes == nil { // no classes.txt: the class index names the class
		for c := range maxLabel + 1 {
			classes = append(classes, strconv.Itoa(c))
		}
	}
	idx[0].Classes, idx[1].Classes = classes, classes
	return idx[0], idx[1], nil
}

// readClasses reads classes.txt: one class name a line. A missing file
// gives nil (the class indices then name the classes).
func readClasses(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	lines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n"), "\n")
	seen := map[string]int{}
	for i, c := range lines {
		if c == "" {
			return nil, fmt.Errorf("data: %s line %d is empty: each line names one class, in index order: %w", file, i+1, ErrLayout)
		}
		if j, ok := seen[c]; ok {
			return nil, fmt.Errorf("data: %s names class %q twice (lines %d and %d): %w", file, c, j+1, i+1, ErrLayout)
		}
		seen[c] = i
	}
	return lines, nil
}

// scanShardSplit reads the shards of one split folder.
func scanShardSplit(dir string, classes []string, skip bool) (*Index, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", dir, err)
	}
	if len(names) == 0 {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("data: split folder %s does not exist (a shard set needs train/*.tar and val/*.tar): %w", dir, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("data: split folder %s holds no .tar shards (train/ does: a shard set needs both): %w", dir, ErrLayout)
	}
	slices.Sort(names)
	ix := &Index{Root: dir}
	for _, name := range names {
		fi, err := os.Stat(name)
		if err != nil {
			return nil, fmt.Errorf("data: shard %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("data: shard %s: %v: %w", name, notRegularFile(fi.Mode().Type()), ErrShard)
		}
		sh := Shard{Path: name, Size: fi.Size()}
		samples, err := readShardIndex(sh, fi, classes)
		if err != nil {
			return nil, err
		}
		if samples == nil {
			var skipped []string
			if samples, skipped, err = scanShard(sh, classes, skip); err != nil {
				return nil, err
			}
			ix.SkippedMembers = append(ix.SkippedMembers, skipped...)
		}
		n := len(ix.Shards)
		ix.Shards = append(ix.Shards, sh)
		members := make([]Member, len(samples))
		for i, s := range samples {
			members[i] = Member{Shard: n, Offset: s.Offset, Size: s.Size}
			ix.Samples = append(ix.Samples, Sample{Path: name + "/" + path.Clean(s.Name), Label: s.Label, Member: &members[i]})
		}
	}
	if len(ix.Samples) == 0 {
		return nil, fmt.Errorf("data: the shards of %s hold no images (members KEY.jpg, KEY.jpeg or KEY.png, each with KEY.cls): %w", dir, ErrLayout)
	}
	return ix, nil
}

// readShardIndex reads sh's index file, if there is one that is current
// (written after the shard, for a shard of its recorded size): nil, nil
// when there is none or it is stale, so that the shard is scanned.
func readShardIndex(sh Shard, shardInfo fs.FileInfo, classes []string) ([]shardIndexSample, error) {
	file := sh.Path + ShardIndexSuffix
	fi, err := os.Stat(file)
	if err != nil || fi.ModTime().Before(shardInfo.ModTime()) {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("data: shard index %w", err)
	}
	var si shardIndex
	if err := json.Unmarshal(b, &si); err != nil || si.Format != shardIndexFormat {
		return nil, fmt.Errorf("data: shard index %s is not a %s file (%v): remove it, and %s is scanned instead: %w", file, shardIndexFormat, err, filepath.Base(sh.Path), ErrShard)
	}
	if si.ShardBytes != sh.Size {
		return nil, nil // the shard changed since: scan it
	}
	for _, s := range si.Samples {
		bad := ""
		switch {
		case !IsImagePath(s.Name) || !localName(s.Name):
			bad = "names no image member in the shard"
		case s.Offset < 0 || s.Size < 0 || s.Offset > sh.Size-s.Size:
			bad = fmt.Sprintf("places it at bytes [%d, %d+%d), outside the shard's %d", s.Offset, s.Offset, s.Size, sh.Size)
		case s.Label < 0 || (classes != nil && s.Label >= len(classes)):
			bad = fmt.Sprintf("gives it class %d, not a class index", s.Label)
		}
		if bad != "" {
			return nil, fmt.Errorf("data: shard index %s: the entry for %q %s: remove the index, and %s is scanned instead: %w", file, s.Name, bad, filepath.Base(sh.Path), ErrShard)
		}
	}
	return si.Samples, nil
}

// localName reports whether a member name stays inside the shard's folder
// once extracted: relative, no "..", no empty name.
func localName(name string) bool {
	return name != "" && !strings.HasPrefix(name, "/") && filepath.IsLocal(filepath.FromSlash(name)) && !strings.Contains(name, "\\")
}

// splitKey splits a member name the WebDataset way: the key is the name
// up to the first dot of its last element, the extension what follows it.
func splitKey(name string) (key, ext string) {
	dir, base := path.Split(name)
	if i := strings.IndexByte(base, '.'); i >= 0 {
		return dir + base[:i], strings.ToLower(base[i+1:])
	}
	return name, ""
}

// maxClsBytes bounds a .cls member: a class index is a few digits.
const maxClsBytes = 64

// scanShard reads sh's tar headers (and its .cls members) for the offsets
// of its image members, without reading the images. With skip, a broken
// member is left out and described in skipped (a truncated shard keeps the
// samples before the cut) instead of failing the scan.
func scanShard(sh Shard, classes []string, skip bool) (samples []shardIndexSample, skipped []string, err error) {
	f, err := os.Open(sh.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("data: shard %w", err)
	}
	defer f.Close()
	sc := &shardScan{sh: sh, classes: classes, skip: skip, byKey: map[string]*shardKey{}}
	sr := io.NewSectionReader(f, 0, sh.Size)
	tr := tar.NewReader(sr)
	for last := ""; ; {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			sc.unreadable(last, err)
			break
		}
		last = h.Name
		off, _ := sr.Seek(0, io.SeekCurrent)
		if !sc.member(h, off, tr) {
			break
		}
	}
	return sc.finish()
}

// shardScan is one scan of a shard: its keys so far, in shard order.
type shardScan struct {
	sh        Shard
	classes   []string
	skip      bool
	byKey     map[string]*shardKey
	order     []*shardKey
	skipped   []string
	err       error
	truncated bool
}

// shardKey is what a scan found of one key.
type shardKey struct {
	img    *shardIndexSample
	label  int
	hasCls bool
	bad    bool // a member of the key was broken: the sample is left out
}

func (sc *shardScan) key(k string) *shardKey {
	e := sc.byKey[k]
	if e == nil {
		e = &shardKey{}
		sc.byKey[k] = e
		sc.order = append(sc.order, e)
	}
	return e
}

// bad records a broken member: the scan's error, or with skip a line of
// skipped. It reports whether the scan goes on.
func (sc *shardScan) bad(e error) bool {
	if !sc.skip {
		sc.err = e
		return false
	}
	sc.skipped = append(sc.skipped, e.Error())
	return true
}

func (sc *shardScan) memberErr(member, format string, args ...any) error {
	return fmt.Errorf("data: shard %s: member %q: %s: %w", sc.sh.Path, member, fmt.Sprintf(format, args...), ErrShard)
}

// unreadable records the tar reader's error after member last.
func (sc *shardScan) unreadable(last string, err error) {
	after := "at its start"
	if last != "" {
		after = fmt.Sprintf("after member %q", last)
	}
	e := fmt.Errorf("data: shard %s: not a readable tar %s (%v): %w", sc.sh.Path, after, err, ErrShard)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		e = fmt.Errorf("data: shard %s is truncated %s (%v): the copy was cut short; copy or pack it again: %w", sc.sh.Path, after, err, ErrShard)
	}
	sc.truncated = true
	sc.bad(e)
}

// member takes in the member h, whose data starts at off and is read from
// tr; it reports whether the scan goes on.
func (sc *shardScan) member(h *tar.Header, off int64, tr io.Reader) bool {
	k, ext := splitKey(h.Name)
	ours := isImageExt(ext) || ext == "cls"
	switch {
	case h.Typeflag == tar.TypeDir || h.Typeflag == tar.TypeXGlobalHeader || !ours && h.Typeflag != tar.TypeReg:
		return true
	case h.Typeflag != tar.TypeReg: // the reader gives old-style '\x00' files as TypeReg
		sc.key(k).bad = true
		return sc.bad(sc.memberErr(h.Name, "is a %s, not a regular file; a shard holds its images and classes as files", tarType(h.Typeflag)))
	case !localName(h.Name):
		sc.key(k).bad = true
		return sc.bad(sc.memberErr(h.Name, "the name leaves the folder the shard would be extracted to (absolute, or through ..): refused, as tar -x refuses it; repack the shard with relative names"))
	case off+h.Size > sc.sh.Size:
		sc.truncated = true
		sc.bad(fmt.Errorf("data: shard %s is truncated: member %q needs bytes [%d, %d), the file ends at %d; copy or pack it again: %w", sc.sh.Path, h.Name, off, off+h.Size, sc.sh.Size, ErrShard))
		return false
	case !ours:
		return true // .json, .txt, ...: not ours
	}
	e := sc.key(k)
	var problem error
	switch {
	case ext == "cls":
		problem = sc.cls(e, h, k, tr)
	case e.img != nil:
		problem = sc.memberErr(h.Name, "key %q has two images (%q too); a sample has one", k, e.img.Name)
	default:
		e.img = &shardIndexSample{Name: h.Name, Offset: off, Size: h.Size}
	}
	if problem == nil {
		return true
	}
	e.bad = true
	return sc.bad(problem)
}

// cls reads the class of key k from its .cls member h.
func (sc *shardScan) cls(e *shardKey, h *tar.Header, k string, tr io.Reader) error {
	switch {
	case e.hasCls:
		return sc.memberErr(h.Name, "key %q has two class members", k)
	case h.Size > maxClsBytes:
		return sc.memberErr(h.Name, "%d bytes: not a class index (a .cls member holds a number like 3)", h.Size)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		return sc.memberErr(h.Name, "reading it: %v", err)
	}
	label, err := parseCls(b, sc.classes)
	if err != nil {
		return sc.memberErr(h.Name, "%v", err)
	}
	e.label, e.hasCls = label, true
	return nil
}

// finish lists the scan's samples: the keys with an image and its class.
func (sc *shardScan) finish() ([]shardIndexSample, []string, error) {
	if sc.err != nil {
		return nil, nil, sc.err
	}
	var samples []shardIndexSample
	for _, e := range sc.order {
		switch {
		case e.img == nil || e.bad:
			continue // a class without an image, or a broken sample (skipped)
		case !e.hasCls && sc.truncated:
			continue // its class was past the cut, which skipped says
		case !e.hasCls:
			k, _ := splitKey(e.img.Name)
			if !sc.bad(sc.memberErr(e.img.Name, "no %s.cls member gives its class; every image needs one", k)) {
				return nil, nil, sc.err
			}
			continue
		}
		e.img.Label = e.label
		samples = append(samples, *e.img)
	}
	return samples, sc.skipped, nil
}

func isImageExt(ext string) bool { return ext == "jpg" || ext == "jpeg" || ext == "png" }

// parseCls reads a .cls member: a class index in ASCII decimal, spaces and
// a newline around it allowed.
func parseCls(b []byte, classes []string) (int, error) {
	s := string(bytes.TrimSpace(b))
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("holds %q, not a class index (a number 0, 1, 2, ... in ASCII)", truncateForMessage(s))
	}
	if classes != nil && n >= len(classes) {
		return 0, fmt.Errorf("class %d, but classes.txt names %d classes (0 to %d)", n, len(classes), len(classes)-1)
	}
	return n, nil
}

func truncateForMessage(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}

func tarType(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeGNUSparse:
		return "sparse file"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "named pipe"
	}
	return fmt.Sprintf("tar entry of type %q", t)
}
