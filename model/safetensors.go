package model

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
)

// Checkpoints are safetensors files (https://huggingface.co/docs/safetensors):
//
//	8 bytes   N, the header size, little-endian uint64
//	N bytes   JSON: {"<name>": {"dtype": "F32", "shape": [...],
//	          "data_offsets": [begin, end]}, ..., "__metadata__": {string: string}},
//	          padded with spaces so that 8+N is a multiple of 8
//	rest      the tensors' little-endian bytes; offsets are relative to
//	          the start of this section
//
// Only F32 is written or accepted: that is all the model holds.

// maxHeader bounds the JSON header, as the reference implementation does
// (100 MB), so that a corrupt size field cannot ask for a huge allocation.
const maxHeader = 100 << 20

const metadataKey = "__metadata__"

// WriteSafetensors writes tensors, in the given order, and meta to path.
// The file appears atomically: it is written to path+".tmp", synced, and
// renamed over path.
func WriteSafetensors(path string, tensors []NamedTensor, meta map[string]string) (err error) {
	buf, err := encodeSafetensors(tensors, meta)
	if err != nil {
		return fmt.Errorf("safetensors %s: %w", path, err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("safetensors %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("safetensors %s: %w", path, err)
		}
	}()
	if _, err = f.Write(buf); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func encodeSafetensors(tensors []NamedTensor, meta map[string]string) ([]byte, error) {
	// The header is built by hand to keep the tensors' order: a Go map
	// would sort the names. Each name and string is quoted by encoding/json.
	var hdr strings.Builder
	hdr.WriteByte('{')
	if len(meta) > 0 {
		mj, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&hdr, "%q:%s", metadataKey, mj)
	}
	seen := make(map[string]bool, len(tensors))
	var offset int
	for _, t := range tensors {
		if t.Name == "" || t.Name == metadataKey {
			return nil, fmt.Errorf("tensor name %q is not allowed", t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("tensor %q appears twice", t.Name)
		}
		seen[t.Name] = true
		n, err := numElements(t.Shape)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if n != len(t.Data) {
			return nil, fmt.Errorf("tensor %q: %d values for shape %v", t.Name, len(t.Data), t.Shape)
		}
		name, _ := json.Marshal(t.Name)
		shape, _ := json.Marshal(nonNil(t.Shape))
		if hdr.Len() > 1 {
			hdr.WriteByte(',')
		}
		fmt.Fprintf(&hdr, `%s:{"dtype":"F32","shape":%s,"data_offsets":[%d,%d]}`, name, shape, offset, offset+4*n)
		offset += 4 * n
	}
	hdr.WriteByte('}')
	for (8+hdr.Len())%8 != 0 {
		hdr.WriteByte(' ')
	}

	buf := make([]byte, 8+hdr.Len()+offset)
	binary.LittleEndian.PutUint64(buf, uint64(hdr.Len()))
	copy(buf[8:], hdr.String())
	p := buf[8+hdr.Len():]
	for _, t := range tensors {
		for _, v := range t.Data {
			binary.LittleEndian.PutUint32(p, math.Float32bits(v))
			p = p[4:]
		}
	}
	return buf, nil
}

func nonNil(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// ReadSafetensors reads a file written by WriteSafetensors, or any
// safetensors file of F32 tensors. It checks everything a corrupt or
// hostile file could get wrong (header size, JSON, dtypes, shapes against
// offsets, offsets against the file, gaps and overlaps) and returns an
// error naming the file rather than panicking. Tensors come back in file
// order.
func ReadSafetensors(path string) ([]NamedTensor, map[string]string, error) {
	return ReadSafetensorsContext(context.Background(), path)
}

// ReadSafetensorsContext is ReadSafetensors that stops when ctx is
// cancelled (its error then wraps ctx.Err()). It reads only a regular file
// (a link to /dev/zero or a FIFO is refused, not read forever or waited
// on), and never more than its header claims: the 8-byte size, the header,
// then exactly the data bytes the header's offsets cover, which must be
// the rest of the file.
func ReadSafetensorsContext(ctx context.Context, path string) ([]NamedTensor, map[string]string, error) {
	buf, err := readSafetensorsBytes(ctx, path)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	ts, meta, err := decodeSafetensors(buf)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	return ts, meta, nil
}

// readChunk is how much is read between two looks at the context.
const readChunk = 1 << 20

func readSafetensorsBytes(ctx context.Context, path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%v): a checkpoint's tensors are read from a file only", fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		return nil, errors.New("the file changed while it was opened")
	}
	size := fi.Size()
	var head [8]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return nil, fmt.Errorf("file is %d bytes, too short for the 8-byte header size", size)
	}
	n := binary.LittleEndian.Uint64(head[:])
	if n < 2 || n > maxHeader || n > uint64(size-8) {
		return nil, fmt.Errorf("header size %d is out of range (file is %d bytes)", n, size)
	}
	buf := make([]byte, 8+n)
	copy(buf, head[:])
	if _, err := io.ReadFull(f, buf[8:]); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	claimed, err := dataBytesClaimed(buf[8:])
	if err != nil {
		return nil, err
	}
	if total := 8 + int64(n) + claimed; total != size {
		return nil, fmt.Errorf("the header's tensors end at byte %d, but the file is %d bytes", total, size)
	}
	buf = slices.Grow(buf, int(claimed))[:8+int(n)+int(claimed)]
	for at := 8 + int(n); at < len(buf); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end := min(at+readChunk, len(buf))
		if _, err := io.ReadFull(f, buf[at:end]); err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
		at = end
	}
	return buf, nil
}

// dataBytesClaimed is where the header says the last tensor ends: the data
// section's size. decodeSafetensors checks the rest of the header.
func dataBytesClaimed(hdr []byte) (int64, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return 0, fmt.Errorf("header: %w", err)
	}
	var end int64
	for name, msg := range raw {
		if name == metadataKey {
			continue
		}
		var info struct {
			DataOffsets []int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &info); err != nil || len(info.DataOffsets) != 2 || info.DataOffsets[1] < 0 {
			return 0, fmt.Errorf("tensor %q: data_offsets must be [begin, end]", name)
		}
		end = max(end, info.DataOffsets[1])
	}
	if end > math.MaxInt32*4 {
		return 0, fmt.Errorf("the header claims %d data bytes, more than any tensor file of ours holds", end)
	}
	return end, nil
}

type tensorInfo struct {
	DType       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

func decodeSafetensors(buf []byte) ([]NamedTensor, map[string]string, error) {
	raw, meta, data, err := splitSafetensors(buf)
	if err != nil {
		return nil, nil, err
	}
	entries := make([]tensorEntry, 0, len(raw))
	for name, msg := range raw {
		e, err := parseTensorEntry(name, msg, int64(len(data)))
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, e)
	}
	if err := checkCoverage(entries, int64(len(data))); err != nil {
		return nil, nil, err
	}
	out := make([]NamedTensor, len(entries))
	for i, e := range entries {
		vals := make([]float32, (e.end-e.begin)/4)
		for j := range vals {
			vals[j] = math.Float32frombits(binary.LittleEndian.Uint32(data[e.begin+4*int64(j):]))
		}
		out[i] = NamedTensor{Name: e.name, Shape: slices.Clone(e.shape), Data: vals}
	}
	return out, meta, nil
}

// splitSafetensors reads a safetensors file's 8-byte header size and JSON
// header: the tensors' entries by name, the __metadata__ strings, and the
// data section after the header.
func splitSafetensors(buf []byte) (raw map[string]json.RawMessage, meta map[string]string, data []byte, err error) {
	if len(buf) < 8 {
		return nil, nil, nil, fmt.Errorf("file is %d bytes, too short for the 8-byte header size", len(buf))
	}
	n := binary.LittleEndian.Uint64(buf)
	if n < 2 || n > maxHeader || n > uint64(len(buf)-8) {
		return nil, nil, nil, fmt.Errorf("header size %d is out of range (file is %d bytes)", n, len(buf))
	}
	hdr, data := buf[8:8+n], buf[8+n:]
	if hdr[0] != '{' {
		return nil, nil, nil, errors.New("header is not a JSON object")
	}
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, nil, nil, fmt.Errorf("header: %w", err)
	}
	if m, ok := raw[metadataKey]; ok {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, nil, nil, fmt.Errorf("header: __metadata__ must map strings to strings: %w", err)
		}
		delete(raw, metadataKey)
	}
	return raw, meta, data, nil
}

// tensorEntry is one tensor of a safetensors header, checked: its shape
// and its bytes [begin, end) of the data section.
type tensorEntry struct {
	name       string
	shape      []int
	begin, end int64
}

// parseTensorEntry reads the header entry msg of tensor name, refusing
// unknown fields, any dtype but F32, a bad shape, and data offsets outside
// the dataLen bytes of data or not the shape's size.
func parseTensorEntry(name string, msg json.RawMessage, dataLen int64) (tensorEntry, error) {
	var info tensorInfo
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&info); err != nil {
		return tensorEntry{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	if info.DType != "F32" {
		return tensorEntry{}, fmt.Errorf("tensor %q: dtype %q, only F32 is supported", name, info.DType)
	}
	if len(info.DataOffsets) != 2 {
		return tensorEntry{}, fmt.Errorf("tensor %q: data_offsets must be [begin, end]", name)
	}
	shape := make([]int, len(info.Shape))
	for i, d := range info.Shape {
		if d < 0 || d > math.MaxInt32 {
			return tensorEntry{}, fmt.Errorf("tensor %q: bad dimension %d in shape %v", name, d, info.Shape)
		}
		shape[i] = int(d)
	}
	count, err := numElements(shape)
	if err != nil {
		return tensorEntry{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	begin, end := info.DataOffsets[0], info.DataOffsets[1]
	if begin < 0 || end < begin || end > dataLen {
		return tensorEntry{}, fmt.Errorf("tensor %q: data_offsets [%d, %d] outside the %d data bytes", name, begin, end, dataLen)
	}
	if end-begin != 4*int64(count) {
		return tensorEntry{}, fmt.Errorf("tensor %q: %d data bytes for F32 shape %v (want %d)", name, end-begin, shape, 4*int64(count))
	}
	return tensorEntry{name, shape, begin, end}, nil
}

// checkCoverage sorts entries by their data offsets and checks that they
// cover the dataLen bytes of the data section exactly, without gaps or
// overlaps.
func checkCoverage(entries []tensorEntry, dataLen int64) error {
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].begin != entries[j].begin {
			return entries[i].begin < entries[j].begin
		}
		return entries[i].end < entries[j].end
	})
	var at int64
	for _, e := range entries {
		if e.begin != at {
			return fmt.Errorf("tensor %q: data starts at byte %d, want %d (gap or overlap)", e.name, e.begin, at)
		}
		at = e.end
	}
	if at != dataLen {
		return fmt.Errorf("tensors cover %d data bytes, file has %d", at, dataLen)
	}
	return nil
}

// numElements is the product of shape, refusing negative dimensions and
// products that would not fit a file (and could overflow).
func numElements(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d != 0 && n > math.MaxInt32/d {
			return 0, fmt.Errorf("shape %v is too large", shape)
		}
		n *= d
	}
	return n, nil
}
