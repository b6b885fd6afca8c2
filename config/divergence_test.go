package config

import (
	"strings"
	"testing"
)

// TestOnDivergenceIsChecked: train.on_divergence is one of its three
// policies, auto by default; anything else names the setting and them.
func TestOnDivergenceIsChecked(t *testing.T) {
	c := Default()
	if c.Train.OnDivergence != "auto" {
		t.Fatalf("default train.on_divergence %q, want auto", c.Train.OnDivergence)
	}
	for _, v := range []string{"auto", "stop", "warn"} {
		c.Train.OnDivergence = v
		if err := c.Validate(); err != nil {
			t.Errorf("train.on_divergence %s: %v", v, err)
		}
	}
	c.Train.OnDivergence = "ignore"
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "train.on_divergence") || !strings.Contains(err.Error(), "auto, stop or warn") {
		t.Fatalf("train.on_divergence ignore: error %v, want one naming the setting and its values", err)
	}
}
