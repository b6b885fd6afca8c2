package main

import (
	"strings"
	"testing"

	"stoke/config"
)

// TestMemoryEstimateDoesNotWrap: the loaders' buffer count is
// data.workers x data.prefetch, which for absurd flags (--workers 2^32
// --prefetch 2^32) wrapped, as an int, to 0 buffers, so the estimate came
// out small and the run went on to allocate 2^32 workers. It is computed
// as a float and the refusal names both settings.
func TestMemoryEstimateDoesNotWrap(t *testing.T) {
	cfg := config.Default()
	for _, wp := range [][2]int{{1 << 32, 1 << 32}, {1 << 62, 4}, {1000000, 1000000}} {
		cfg.Data.Workers, cfg.Data.Prefetch = config.Workers(wp[0]), wp[1]
		need, detail := estimateRun(cfg)
		if min := 2 * float64(wp[0]) * float64(wp[1]); !(need >= min) {
			t.Errorf("workers %d x prefetch %d: estimate %g bytes (%s), below the %g buffers alone", wp[0], wp[1], need, detail, min)
		}
		err := checkMemory(cfg)
		if err == nil {
			t.Errorf("workers %d x prefetch %d: not refused", wp[0], wp[1])
			continue
		}
		for _, want := range []string{"data.workers", "data.prefetch"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("workers %d x prefetch %d: the refusal does not name %s: %v", wp[0], wp[1], want, err)
			}
		}
	}
}
