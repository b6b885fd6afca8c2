package main

import (
	"strings"
	"syscall"
	"testing"

	"stoke/dist"
)

// TestSignalNoteOnARank: a rank of a job of several is told what its
// launcher's signal means (another rank failed, or the job was stopped),
// not that a person asked it to stop at a clean point.
func TestSignalNoteOnARank(t *testing.T) {
	rank := signalNote(syscall.SIGTERM, dist.Launch{Launcher: "mpirun", Rank: 1, Size: 2})
	for _, want := range []string{"rank 1 of 2", "mpirun", "when one fails"} {
		if !strings.Contains(rank, want) {
			t.Errorf("a rank's note lacks %q: %s", want, rank)
		}
	}
	if strings.Contains(rank, "clean point") {
		t.Errorf("a rank's note promises a clean stop: %s", rank)
	}
	for _, l := range []dist.Launch{{}, {Launcher: "mpirun", Size: 1}} {
		if got := signalNote(syscall.SIGINT, l); !strings.Contains(got, "stopping at the next clean point (interrupt again to exit at once)") {
			t.Errorf("one process (%+v): %s", l, got)
		}
	}
}
