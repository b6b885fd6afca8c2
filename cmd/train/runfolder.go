package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// runFolder remembers whether a run folder existed before a run, so that a
// run interrupted in its set-up (before the first step: nothing to keep)
// leaves no folder of its own behind that a later run would take for a
// used one.
type runFolder struct {
	dir     string
	existed bool
}

func newRunFolder(dir string) runFolder {
	_, err := os.Stat(dir)
	return runFolder{dir: dir, existed: !errors.Is(err, fs.ErrNotExist)}
}

// removeIfUnused removes what a run writes at its start (config.yaml, an
// empty metrics.jsonl) when the folder holds no checkpoint, and then the
// folder itself if this run made it and nothing else is in it.
func (r runFolder) removeIfUnused() {
	if _, err := os.Stat(filepath.Join(r.dir, "latest.json")); err == nil {
		return
	}
	if _, err := os.Stat(filepath.Join(r.dir, "checkpoints")); err == nil {
		return
	}
	if st, err := os.Stat(filepath.Join(r.dir, "metrics.jsonl")); err == nil && st.Size() > 0 {
		return
	}
	os.Remove(filepath.Join(r.dir, "metrics.jsonl"))
	os.Remove(filepath.Join(r.dir, "config.yaml"))
	if !r.existed {
		os.Remove(r.dir) // only when empty
	}
}
