package config

import (
	"strings"
	"testing"
)

// TestDataFormatIsChecked: data.format is auto by default and must be
// auto, folder or shards.
func TestDataFormatIsChecked(t *testing.T) {
	c := Default()
	if c.Data.Format != "auto" {
		t.Errorf("data.format defaults to %q, want auto", c.Data.Format)
	}
	for _, f := range []string{"auto", "folder", "shards"} {
		c.Data.Format = f
		if err := c.Validate(); err != nil {
			t.Errorf("data.format %s: %v", f, err)
		}
	}
	c.Data.Format = "tar"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `data.format: must be auto, folder or shards, got "tar"`) {
		t.Errorf("data.format tar: %v", err)
	}
}

// TestShuffleBufferIsChecked: data.shuffle_buffer is 0 by default (the
// global permutation) and may not be negative.
func TestShuffleBufferIsChecked(t *testing.T) {
	c := Default()
	if c.Data.ShuffleBuf != 0 {
		t.Errorf("data.shuffle_buffer defaults to %d, want 0", c.Data.ShuffleBuf)
	}
	c.Data.ShuffleBuf = -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "data.shuffle_buffer: must be 0 (the global permutation) or more, got -1") {
		t.Errorf("data.shuffle_buffer -1: %v", err)
	}
}
