package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var sampleTensors = []NamedTensor{
	{Name: "b", Shape: []int{2, 3}, Data: []float32{1, -2, 3.5, float32(math.Inf(1)), 0, -0.25}},
	{Name: "a", Shape: []int{1}, Data: []float32{7}},
	{Name: "scalar", Shape: []int{}, Data: []float32{42}},
	{Name: "empty", Shape: []int{0, 4}, Data: []float32{}},
}

func TestSafetensorsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	meta := map[string]string{"epoch": "3", "spec": `{"conv":[1]}`}
	if err := WriteSafetensors(path, sampleTensors, meta); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
	got, gotMeta, err := ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(sampleTensors) {
		t.Fatalf("read %d tensors, wrote %d", len(got), len(sampleTensors))
	}
	for i, want := range sampleTensors {
		g := got[i] // file order is write order
		if g.Name != want.Name || len(g.Shape) != len(want.Shape) || len(g.Data) != len(want.Data) {
			t.Errorf("tensor %d: got %s %v (%d values), want %s %v (%d)", i, g.Name, g.Shape, len(g.Data), want.Name, want.Shape, len(want.Data))
			continue
		}
		for j := range want.Data {
			if math.Float32bits(g.Data[j]) != math.Float32bits(want.Data[j]) {
				t.Errorf("%s[%d] = %v, want %v", want.Name, j, g.Data[j], want.Data[j])
			}
		}
	}
	if len(gotMeta) != 2 || gotMeta["epoch"] != "3" || gotMeta["spec"] != meta["spec"] {
		t.Errorf("metadata %v, want %v", gotMeta, meta)
	}
}

// TestSafetensorsHeaderLayout parses a file of ours by the spec alone.
func TestSafetensorsHeaderLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := WriteSafetensors(path, sampleTensors[:2], map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(buf)
	if (8+n)%8 != 0 {
		t.Errorf("header size %d: data does not start 8-aligned", n)
	}
	hdr := buf[8 : 8+n]
	if trimmed := bytes.TrimRight(hdr, " "); !json.Valid(trimmed) || len(hdr)-len(trimmed) >= 8 {
		t.Errorf("header is not JSON padded with fewer than 8 spaces: %q", hdr)
	}
	var parsed map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &parsed); err != nil {
		t.Fatal(err)
	}
	var meta map[string]string
	if err := json.Unmarshal(parsed["__metadata__"], &meta); err != nil || meta["k"] != "v" {
		t.Errorf("__metadata__ = %s", parsed["__metadata__"])
	}
	var b struct {
		DType       string `json:"dtype"`
		Shape       []int  `json:"shape"`
		DataOffsets []int  `json:"data_offsets"`
	}
	if err := json.Unmarshal(parsed["b"], &b); err != nil {
		t.Fatal(err)
	}
	if b.DType != "F32" || len(b.Shape) != 2 || b.Shape[0] != 2 || b.Shape[1] != 3 || b.DataOffsets[0] != 0 || b.DataOffsets[1] != 24 {
		t.Errorf("entry b = %+v, want F32 [2 3] [0 24]", b)
	}
	if err := json.Unmarshal(parsed["a"], &b); err != nil || b.DataOffsets[0] != 24 || b.DataOffsets[1] != 28 {
		t.Errorf("entry a = %+v, want offsets [24 28]", b)
	}
	data := buf[8+n:]
	if len(data) != 28 || math.Float32frombits(binary.LittleEndian.Uint32(data[8:])) != 3.5 || math.Float32frombits(binary.LittleEndian.Uint32(data[24:])) != 7 {
		t.Errorf("data section is not the little-endian values: % x", data)
	}
}

// file builds a safetensors file from a raw header and data.
func file(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

func TestSafetensorsRejectsCorruptFiles(t *testing.T) {
	good, err := encodeSafetensors(sampleTensors[:2], map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	eight := make([]byte, 8)
	hugeHeader := binary.LittleEndian.AppendUint64(nil, 1<<62)
	cases := map[string][]byte{
		"empty":             {},
		"short":             good[:5],
		"truncated header":  good[:20],
		"truncated data":    good[:len(good)-1],
		"extra data":        append(append([]byte(nil), good...), 0, 0, 0, 0),
		"huge header size":  append(hugeHeader, good[8:]...),
		"not json":          file("{not json}", nil),
		"json array":        file("[1,2]   ", nil),
		"dtype":             file(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)),
		"shape vs offsets":  file(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, eight),
		"offsets past end":  file(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, eight),
		"offsets reversed":  file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, eight),
		"negative dim":      file(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, eight),
		"overflowing shape": file(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, eight),
		"gap":               file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight),
		"overlap":           file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight),
		"bad metadata":      file(`{"__metadata__":{"k":1}}`, nil),
		"unknown field":     file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}}`, eight),
		"offsets arity":     file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}}`, eight),
	}
	dir := t.TempDir()
	for name, b := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".safetensors")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := ReadSafetensors(path)
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
	if _, _, err := ReadSafetensors(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file: accepted")
	}
}

func TestWriteSafetensorsRejectsBadTensors(t *testing.T) {
	dir := t.TempDir()
	for name, ts := range map[string][]NamedTensor{
		"size mismatch": {{Name: "a", Shape: []int{3}, Data: []float32{1}}},
		"duplicate":     {{Name: "a", Shape: []int{1}, Data: []float32{1}}, {Name: "a", Shape: []int{1}, Data: []float32{1}}},
		"reserved name": {{Name: "__metadata__", Shape: []int{1}, Data: []float32{1}}},
	} {
		path := filepath.Join(dir, "out.safetensors")
		if err := WriteSafetensors(path, ts, nil); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s: a file was written", name)
		}
	}
}

// FuzzDecodeSafetensors: no input panics, and what decodes re-encodes to
// something that decodes the same.
func FuzzDecodeSafetensors(f *testing.F) {
	good, _ := encodeSafetensors(sampleTensors, map[string]string{"k": "v"})
	f.Add(good)
	f.Add(file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, meta, err := decodeSafetensors(b)
		if err != nil {
			return
		}
		again, err := encodeSafetensors(ts, meta)
		if err != nil {
			t.Fatalf("re-encoding a decoded file: %v", err)
		}
		ts2, _, err := decodeSafetensors(again)
		if err != nil || len(ts2) != len(ts) {
			t.Fatalf("re-decoding: %v (%d tensors, want %d)", err, len(ts2), len(ts))
		}
	})
}
