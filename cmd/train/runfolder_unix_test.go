//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestResumeAndEvalRefuseAFIFOCheckpoint: a FIFO as the latest
// checkpoint's model.safetensors is refused by --resume and by train eval
// (before, train eval blocked on it, and SIGTERM did not end it).
func TestResumeAndEvalRefuseAFIFOCheckpoint(t *testing.T) {
	args, run := smallArgs(t, "--epochs", "1")
	runOrFail(t, command(args...))
	weights := filepath.Join(run, "checkpoints", "epoch-0001", "model.safetensors")
	os.Remove(weights)
	if err := syscall.Mkfifo(weights, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, c := range [][]string{{"--resume", run, "--epochs", "2"}, {"eval", "--checkpoint", run}} {
		cmd := command(c...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		err := waitWithin(t, cmd, 2*time.Minute) // a guard against a hang, not a timing
		if exitCode(err) != 1 || !strings.Contains(out.String(), "not a regular file") {
			t.Errorf("%v: exit %d, want 1 naming the FIFO as not a regular file:\n%s", c, exitCode(err), out.String())
		}
	}
}

// TestSIGTERMStopsACheckpointRead: SIGTERM while train eval hashes a
// checkpoint's 8 GB model.safetensors (sparse: it costs no disk) ends the
// read, and the command, with the interrupt; before, the signal was
// acknowledged and the hash read on to its end.
func TestSIGTERMStopsACheckpointRead(t *testing.T) {
	args, run := smallArgs(t, "--epochs", "1")
	runOrFail(t, command(args...))
	weights := filepath.Join(run, "checkpoints", "epoch-0001", "model.safetensors")
	const data = 4 * (1<<31 - 1) // one F32 tensor of 2^31-1 values
	hdr := `{"w":{"dtype":"F32","shape":[2147483647],"data_offsets":[0,8589934588]}}`
	for (8+len(hdr))%8 != 0 {
		hdr += " "
	}
	f, err := os.Create(weights)
	if err != nil {
		t.Fatal(err)
	}
	var size [8]byte
	for i := range 8 {
		size[i] = byte(len(hdr) >> (8 * i))
	}
	f.Write(size[:])
	f.WriteString(hdr)
	if err := f.Truncate(int64(8 + len(hdr) + data)); err != nil {
		f.Close()
		t.Skipf("no sparse 8 GB file here: %v", err)
	}
	f.Close()
	// A signal before the command's handler is installed ends it by
	// default (exit 143), which tests nothing here: try later then.
	for _, d := range []time.Duration{300 * time.Millisecond, time.Second, 3 * time.Second} {
		cmd := command("eval", "--checkpoint", run)
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(d)
		cmd.Process.Signal(syscall.SIGTERM)
		err := waitWithin(t, cmd, 2*time.Minute) // a guard against a hang, not a timing
		if exitCode(err) == -1 {
			continue // killed by the signal, before the handler
		}
		if exitCode(err) == 0 || !strings.Contains(out.String(), "context canceled") || strings.Contains(out.String(), "not the file the checkpoint wrote") {
			t.Errorf("SIGTERM %v into train eval: exit %d, want the interrupt reported, not the hash's end:\n%s", d, exitCode(err), out.String())
		}
		return
	}
	t.Skip("the signal came before the handler each time")
}
