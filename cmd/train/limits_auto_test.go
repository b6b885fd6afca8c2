package main

import (
	"strings"
	"testing"

	"stoke/config"
	"stoke/data"
)

// Under data.workers: auto the memory check counts the buffers of the most
// workers auto may pick, not the 2 it starts with.
func TestMemoryEstimateCountsAutoAtItsMost(t *testing.T) {
	cfg := config.Default()
	cfg.Train.Threads = 4
	cfg.Data.Workers = config.WorkersAuto
	_, auto := estimateRun(cfg)
	cfg.Data.Workers = config.Workers(data.AutoWorkersLimit(4))
	_, most := estimateRun(cfg)
	if auto != most || !strings.Contains(auto, "x 8 buffers") {
		t.Errorf("auto: %s\n%d workers: %s\nwant the same, 4 workers x prefetch 2 = 8 buffers a loader", auto, data.AutoWorkersLimit(4), most)
	}
}
