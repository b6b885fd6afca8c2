package trainer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// listDir is the sorted names in dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestNothingIsReadOrWrittenThroughALinkOutOfTheRun: with checkpoints/,
// eval/, best/, latest.json or the lock of run B a link into run A, a
// resume of B is refused naming the link, and A is left as it was (before,
// a linked checkpoints/ pruned A to B's keep_checkpoints and B continued
// from A's weights).
func TestNothingIsReadOrWrittenThroughALinkOutOfTheRun(t *testing.T) {
	ca := tinyConfig(t)
	ca.Train.KeepCkpts = 10
	runOK(t, ca)
	wantA := snapshot(t, ca.Train.Out)
	for _, name := range []string{"checkpoints", "eval", bestDir, latestFile, lockFile} {
		cb := tinyConfig(t)
		cb.Train.Epochs = 1
		runOK(t, cb)
		link := filepath.Join(cb.Train.Out, name)
		if err := os.RemoveAll(link); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(ca.Train.Out, name), link); err != nil {
			t.Skipf("no symlinks here: %v", err)
		}
		cb.Train.Resume, cb.Train.Epochs = cb.Train.Out, 3
		_, err := Run(context.Background(), cb, Options{Out: new(strings.Builder)})
		var lo *linkOutError
		if !errors.As(err, &lo) || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "outside the run folder") {
			t.Errorf("%s a link into another run: error %v, want one naming %s as a link out of the run", name, err, link)
		}
		if got := snapshot(t, ca.Train.Out); !mapsEqual(got, wantA) {
			t.Errorf("%s a link into another run: that run's files changed", name)
		}
	}
}

// TestAFreshRunRefusesALinkOut: a fresh run into a folder whose
// checkpoints/ is a link elsewhere writes nothing there.
func TestAFreshRunRefusesALinkOut(t *testing.T) {
	c := tinyConfig(t)
	elsewhere := t.TempDir()
	os.MkdirAll(c.Train.Out, 0o755)
	if err := os.Symlink(elsewhere, filepath.Join(c.Train.Out, "eval")); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	_, err := Run(context.Background(), c, Options{Out: new(strings.Builder)})
	var lo *linkOutError
	if !errors.As(err, &lo) {
		t.Fatalf("error %v, want a link out of the run", err)
	}
	if names := listDir(t, elsewhere); len(names) > 0 {
		t.Errorf("written through the link: %v", names)
	}
}

// TestACheckpointOfAnotherRunIsRefused: a checkpoint copied into another
// run's folder is refused there by its run id, and pruning leaves a copied
// one alone: it is not this run's to delete.
func TestACheckpointOfAnotherRunIsRefused(t *testing.T) {
	ca := tinyConfig(t)
	ca.Train.Epochs = 1
	runOK(t, ca)
	cb := tinyConfig(t)
	cb.Train.Epochs = 1
	runOK(t, cb)
	latestB, _ := latestCheckpoint(cb.Train.Out)
	latestA, _ := latestCheckpoint(ca.Train.Out)
	os.RemoveAll(latestB)
	if err := os.CopyFS(latestB, os.DirFS(latestA)); err != nil {
		t.Fatal(err)
	}
	cb.Train.Resume, cb.Train.Epochs = cb.Train.Out, 2
	_, err := Run(context.Background(), cb, Options{Out: new(strings.Builder)})
	if err == nil || !strings.Contains(err.Error(), "belongs to run") || !strings.Contains(err.Error(), runIDFile) {
		t.Fatalf("a checkpoint of run A as run B's latest: error %v, want it refused as another run's", err)
	}

	// A foreign checkpoint beside B's own: kept by B's pruning.
	cc := tinyConfig(t)
	cc.Train.Epochs = 1
	runOK(t, cc)
	foreign := filepath.Join(cc.Train.Out, "checkpoints", "epoch-0000")
	if err := os.CopyFS(foreign, os.DirFS(latestA)); err != nil {
		t.Fatal(err)
	}
	cc.Train.Resume, cc.Train.Epochs, cc.Train.KeepCkpts = cc.Train.Out, 3, 1
	runOK(t, cc)
	if got, want := listDir(t, filepath.Join(cc.Train.Out, "checkpoints")), []string{"epoch-0000", "epoch-0003"}; !slices.Equal(got, want) {
		t.Errorf("after pruning to 1: %v, want %v (the other run's copy kept, this run's newest)", got, want)
	}
}

// TestADamagedLatestCheckpointIsNamed: with the latest checkpoint's
// state.json gone, the resume names it as damaged and names the intact
// one (before: "holds no checkpoint ... remove the folder's files").
func TestADamagedLatestCheckpointIsNamed(t *testing.T) {
	c := tinyConfig(t)
	runOK(t, c)
	latest, _ := latestCheckpoint(c.Train.Out)
	os.Remove(filepath.Join(latest, stateFile))
	_, err := loadCheckpointState(context.Background(), c.Train.Out)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	for _, want := range []string{"latest checkpoint " + latest, "damaged", "intact: epoch-0001", "--resume " + filepath.Join(c.Train.Out, "checkpoints", "epoch-0001")} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "remove the folder") {
		t.Errorf("error %q advises removing a run that has an intact checkpoint", msg)
	}
	// Without latest.json, the checkpoints are named too.
	os.Remove(filepath.Join(c.Train.Out, latestFile))
	if _, err := loadCheckpointState(context.Background(), c.Train.Out); err == nil || !strings.Contains(err.Error(), "intact: epoch-0001") {
		t.Errorf("no latest.json: error %v, want the intact epoch-0001 named", err)
	}
}

// TestCheckpointReadsStopWithTheirContext: a load whose context is
// cancelled returns the context's error, not a checkpoint.
func TestCheckpointReadsStopWithTheirContext(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	runOK(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := loadCheckpointState(ctx, c.Train.Out); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled load: error %v, want context.Canceled", err)
	}
	if _, err := Evaluate(ctx, c.Train.Out, "", "", new(strings.Builder)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled evaluate: error %v, want context.Canceled", err)
	}
}

// TestPartialCheckpointIsNamedByItsEpoch: an interrupt in epoch 2 writes
// epoch-0002-batch-NNNN, the epoch it stopped in.
func TestPartialCheckpointIsNamedByItsEpoch(t *testing.T) {
	c := tinyConfig(t) // 4 steps an epoch
	err := interruptAfter(t, "step 6", c, Options{}, 6)
	var intr *InterruptedError
	errors.As(err, &intr)
	if got := filepath.Base(intr.Checkpoint); got != "epoch-0002-batch-0002" {
		t.Errorf("interrupted after 2 batches of epoch 2: checkpoint %s, want epoch-0002-batch-0002", got)
	}
	st, err := loadCheckpointState(context.Background(), c.Train.Out)
	if err != nil || st.Epoch != 1 || st.Partial.Batches != 2 {
		t.Fatalf("state %+v, %v; want 1 epoch and 2 batches done", st, err)
	}
}

// TestACheckpointOfAnotherRunIsNotReplaced: a checkpoint folder of another
// run in the place of the next one this run writes stops the run there,
// naming it, instead of being deleted.
func TestACheckpointOfAnotherRunIsNotReplaced(t *testing.T) {
	ca := tinyConfig(t)
	ca.Train.Epochs = 2
	runOK(t, ca)
	cb := tinyConfig(t)
	cb.Train.Epochs = 1
	runOK(t, cb)
	theirs := filepath.Join(cb.Train.Out, "checkpoints", "epoch-0002")
	if err := os.CopyFS(theirs, os.DirFS(filepath.Join(ca.Train.Out, "checkpoints", "epoch-0002"))); err != nil {
		t.Fatal(err)
	}
	cb.Train.Resume, cb.Train.Epochs = cb.Train.Out, 2
	_, err := Run(context.Background(), cb, Options{Out: new(strings.Builder)})
	if err == nil || !strings.Contains(err.Error(), "already holds a checkpoint of another run") {
		t.Fatalf("error %v, want the other run's checkpoint named", err)
	}
	if _, err := os.Stat(filepath.Join(theirs, stateFile)); err != nil {
		t.Errorf("the other run's checkpoint was touched: %v", err)
	}
}
