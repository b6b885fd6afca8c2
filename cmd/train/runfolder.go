package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"stoke/config"
	"stoke/configs"
	"stoke/trainer"
)

// nextFreeOut picks the run folder of a fresh run whose folder the user did
// not name (train.out of the built-in or a shipped config, no --out): when
// that folder already holds a run, the run goes to the first of
// OUT-2, OUT-3, ... that holds none, and says so, so that the quickstart
// can simply be run again. A folder the user named is never changed (a
// used one is refused, naming --resume), and neither is one under a
// launcher, whose ranks must agree on the folder without a race.
func nextFreeOut(cfg *config.Config, cfgPath string, overrides []config.Override, stdout io.Writer) {
	if cfg.Train.Resume != "" || launchRanks() > 1 || !trainer.HoldsRun(cfg.Train.Out) {
		return
	}
	for _, o := range overrides {
		if o.Path == "train.out" {
			return
		}
	}
	if cfgPath != "" {
		if _, err := os.Stat(cfgPath); err == nil {
			return // the user's own config file names its folder
		}
		if _, _, shipped := configs.Lookup(cfgPath); !shipped {
			return
		}
	}
	for n := 2; n < 10000; n++ {
		next := fmt.Sprintf("%s-%d", filepath.Clean(cfg.Train.Out), n)
		if _, err := os.Lstat(next); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stdout, "note: %s holds an earlier run (continue it with --resume %s); this one goes to %s (--out names the folder)\n", cfg.Train.Out, cfg.Train.Out, next)
			cfg.Train.Out = next
			return
		}
	}
}
