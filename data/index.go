package data

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrLayout marks a dataset folder that exists but is not a usable
// ImageFolder (classes differ between splits, an empty class, no images).
// A dataset that is not there at all wraps fs.ErrNotExist instead, so
// callers can tell "generate or download it" apart from "fix it".
var ErrLayout = errors.New("not a usable ImageFolder dataset")

// imageExts are the file extensions Scan picks up, compared in lower case.
var imageExts = map[string]bool{".jpg": true, ".jpeg": true, ".png": true}

// IsImagePath reports whether name has an extension Scan treats as an image.
func IsImagePath(name string) bool {
	return imageExts[strings.ToLower(filepath.Ext(name))]
}

// Scan reads the ImageFolder layout under root:
//
//	root/train/<class>/**/*.{jpg,jpeg,png}
//	root/val/<class>/**/*.{jpg,jpeg,png}
//
// or, when root/train holds .tar files and no folders, the tar shards of
// the WebDataset layout (shards.go, docs/shards.md).
//
// Extensions are matched case-insensitively. Images are found recursively
// under each class folder; symlinked class folders and symlinked files are
// followed, symlinked folders below a class are not (so a link loop cannot
// hang Scan). Hidden entries (".name") are ignored. Both splits get the
// same sorted class list, and every class must have at least one image in
// each split.
func Scan(root string) (train, val *Index, err error) {
	return ScanWith(root, ScanOptions{})
}

// The dataset layouts (ScanOptions.Format, data.format).
const (
	FormatAuto   = "auto"
	FormatFolder = "folder"
	FormatShards = "shards"
)

// ScanOptions are Scan's choices.
type ScanOptions struct {
	// Format is the layout: FormatAuto ("", tar shards when root/train
	// holds .tar files and no folders, else an ImageFolder), FormatFolder
	// or FormatShards.
	Format string
	// SkipBadShards leaves a broken tar shard member out (a member without
	// its .cls, a .cls that is no class index, a name through "..", the
	// rest of a truncated shard) and lists it in Index.SkippedMembers,
	// instead of failing with its ErrShard (data.bad_images: skip).
	SkipBadShards bool
}

// ScanWith is Scan with options.
func ScanWith(root string, opt ScanOptions) (train, val *Index, err error) {
	fi, err := os.Stat(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("data: dataset folder %s does not exist (`train gen-data --out %s` makes a demo set): %w", root, root, fs.ErrNotExist)
		}
		return nil, nil, fmt.Errorf("data: dataset folder %s: %w", root, err)
	}
	if !fi.IsDir() {
		return nil, nil, fmt.Errorf("data: dataset root %s is a file, not a folder with train/ and val/: %w", root, ErrLayout)
	}
	switch opt.Format {
	case "", FormatAuto:
		if shards, err := isShardSet(root); err != nil || shards {
			if err != nil {
				return nil, nil, err
			}
			return scanShards(root, opt)
		}
	case FormatShards:
		if tars, _ := filepath.Glob(filepath.Join(root, "train", "*.tar")); len(tars) == 0 {
			return nil, nil, fmt.Errorf("data: data.format is shards, but %s holds no .tar files (a shard set is train/*.tar and val/*.tar; `train pack` makes one from an ImageFolder): %w", filepath.Join(root, "train"), ErrLayout)
		}
		return scanShards(root, opt)
	case FormatFolder:
	default:
		return nil, nil, fmt.Errorf("data: unknown dataset format %q: want %q, %q or %q", opt.Format, FormatAuto, FormatFolder, FormatShards)
	}
	var splits [2]map[string]string // class name -> class folder
	for i, split := range []string{"train", "val"} {
		dir := filepath.Join(root, split)
		classes, err := classDirs(dir)
		if err != nil {
			return nil, nil, err
		}
		splits[i] = classes
	}
	if err := sameClasses(root, splits[0], splits[1]); err != nil {
		return nil, nil, err
	}
	classes := make([]string, 0, len(splits[0]))
	for c := range splits[0] {
		classes = append(classes, c)
	}
	slices.Sort(classes)

	var idx [2]*Index
	for i, split := range []string{"train", "val"} {
		ix := &Index{Root: filepath.Join(root, split), Classes: classes}
		for label, c := range classes {
			dir := splits[i][c]
			var paths []string
			if err := walkImages(dir, &paths); err != nil {
				return nil, nil, err
			}
			if len(paths) == 0 {
				return nil, nil, fmt.Errorf("data: class folder %s holds no .jpg, .jpeg or .png images: %w", dir, ErrLayout)
			}
			slices.Sort(paths)
			for _, p := range paths {
				ix.Samples = append(ix.Samples, Sample{Path: p, Label: label})
			}
		}
		idx[i] = ix
	}
	return idx[0], idx[1], nil
}

// classDirs lists the class folders of one split: its non-hidden
// subfolders, or symlinks to folders.
func classDirs(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("data: split folder %s does not exist (an ImageFolder dataset needs train/<class>/ and val/<class>/): %w", dir, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("data: reading split folder %s: %w", dir, err)
	}
	classes := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		p := filepath.Join(dir, name)
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			fi, err := os.Stat(p) // a symlinked class folder is followed once
			isDir = err == nil && fi.IsDir()
			if isDir {
				if err := linkLoop(dir, p); err != nil {
					return nil, err
				}
			}
		}
		if isDir {
			classes[name] = p
		}
	}
	if len(classes) == 0 {
		return nil, fmt.Errorf("data: split folder %s has no class folders, so no images (expected %s/<class>/*.jpg): %w", dir, dir, ErrLayout)
	}
	return classes, nil
}

// linkLoop refuses a class folder link that points at the split folder
// holding it or at a folder above it (train/x -> ., train/x -> ..): read
// as a class, it would hold every image of the split, under one label.
func linkLoop(split, link string) error {
	target, err := filepath.EvalSymlinks(link)
	if err != nil {
		return fmt.Errorf("data: class folder %s: %w", link, err)
	}
	real, err := filepath.EvalSymlinks(split)
	if err != nil {
		return fmt.Errorf("data: split folder %s: %w", split, err)
	}
	rel, err := filepath.Rel(target, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil // not above the split
	}
	to, _ := os.Readlink(link)
	return fmt.Errorf("data: class folder %s is a link to %q (%s), a folder that holds it: a loop, not a class (it would hold every image of %s under one label); remove the link: %w",
		link, to, target, split, ErrLayout)
}

// sameClasses checks that train and val name the same classes, naming every
// class found in one split only.
func sameClasses(root string, train, val map[string]string) error {
	var onlyVal, onlyTrain []string
	for c := range val {
		if _, ok := train[c]; !ok {
			onlyVal = append(onlyVal, c)
		}
	}
	for c := range train {
		if _, ok := val[c]; !ok {
			onlyTrain = append(onlyTrain, c)
		}
	}
	slices.Sort(onlyVal)
	slices.Sort(onlyTrain)
	var msgs []string
	if len(onlyVal) > 0 {
		msgs = append(msgs, fmt.Sprintf("val class %s missing from %s", quoteList(onlyVal), filepath.Join(root, "train")))
	}
	if len(onlyTrain) > 0 {
		msgs = append(msgs, fmt.Sprintf("train class %s missing from %s", quoteList(onlyTrain), filepath.Join(root, "val")))
	}
	if len(msgs) > 0 {
		return fmt.Errorf("data: train and val must have the same classes: %s: %w", strings.Join(msgs, "; "), ErrLayout)
	}
	return nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// walkImages appends the image files under dir. It reads dir itself even if
// dir is a symlink, follows symlinked files, and does not descend into
// symlinked folders, so it always terminates.
func walkImages(dir string, out *[]string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("data: reading class folder %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		p := filepath.Join(dir, name)
		switch {
		case e.IsDir():
			if err := walkImages(p, out); err != nil {
				return err
			}
		case e.Type()&fs.ModeSymlink != 0:
			if !IsImagePath(name) {
				continue
			}
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				*out = append(*out, p)
			}
		case e.Type().IsRegular() && IsImagePath(name):
			*out = append(*out, p)
		}
	}
	return nil
}

// FileList sums up the files of a dataset's two splits, so that a resumed
// run can tell whether it sees the dataset its checkpoint was trained on.
type FileList struct {
	Train int `json:"train"` // images in train/
	Val   int `json:"val"`   // images in val/
	// SHA256 is the hex SHA-256 of every image's path relative to the
	// dataset folder ("train/cat/1.jpg", forward slashes, the name's bytes
	// as they are) and size in bytes, sorted by path: the same wherever the
	// dataset is kept, different when a file is added, removed, renamed or
	// changes size.
	SHA256 string `json:"sha256"`
}

// ListFiles computes the FileList of train and val (as Scan returns them),
// reading each image's size, not its bytes.
func ListFiles(train, val *Index) (FileList, error) {
	var entries []string
	for _, ix := range []*Index{train, val} {
		split := filepath.Base(ix.Root)
		for _, s := range ix.Samples {
			if s.Member != nil { // a shard's member: shard/member, its size
				rel, err := filepath.Rel(ix.Root, s.Path)
				if err != nil {
					return FileList{}, fmt.Errorf("data: %s: %w", s.Path, err)
				}
				entries = append(entries, fmt.Sprintf("%s/%s\x00%d\n", split, filepath.ToSlash(rel), s.Member.Size))
				continue
			}
			rel, err := filepath.Rel(ix.Root, s.Path)
			if err != nil {
				return FileList{}, fmt.Errorf("data: %s: %w", s.Path, err)
			}
			fi, err := os.Stat(s.Path)
			if err != nil {
				return FileList{}, fmt.Errorf("data: image %s: %w", s.Path, err)
			}
			entries = append(entries, fmt.Sprintf("%s/%s\x00%d\n", split, filepath.ToSlash(rel), fi.Size()))
		}
	}
	slices.Sort(entries)
	h := sha256.New()
	for _, e := range entries {
		h.Write([]byte(e))
	}
	return FileList{Train: len(train.Samples), Val: len(val.Samples), SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
