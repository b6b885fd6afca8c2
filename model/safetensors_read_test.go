package model

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadSafetensorsReadsOnlyWhatTheHeaderClaims: a device (/dev/zero, as
// a link or named directly) is refused, not read until memory runs out; a
// file with bytes past its last tensor is refused without reading them; a
// cancelled read returns the context's error.
func TestReadSafetensorsReadsOnlyWhatTheHeaderClaims(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.safetensors")
	if err := WriteSafetensors(good, []NamedTensor{{Name: "w", Shape: []int{2, 3}, Data: make([]float32, 6)}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		link := filepath.Join(dir, "zero.safetensors")
		if err := os.Symlink("/dev/zero", link); err == nil {
			if _, _, err := ReadSafetensors(link); err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("a link to /dev/zero: error %v, want it refused as not a regular file", err)
			}
		}
	}
	b, _ := os.ReadFile(good)
	long := filepath.Join(dir, "long.safetensors")
	os.WriteFile(long, append(b, make([]byte, 4096)...), 0o644)
	if _, _, err := ReadSafetensors(long); err == nil || !strings.Contains(err.Error(), "tensors end at byte") {
		t.Errorf("4096 bytes past the last tensor: error %v, want the header's end named", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := ReadSafetensorsContext(ctx, good); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read: error %v, want context.Canceled", err)
	}
	if ts, _, err := ReadSafetensorsContext(context.Background(), good); err != nil || len(ts) != 1 || len(ts[0].Data) != 6 {
		t.Errorf("the good file: %v, %v", ts, err)
	}
}
