package trainer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A run folder belongs to one run, written by one trainer at a time:
//
//   - the trainer holds an exclusive lock (flock, runlock_unix.go) on
//     RUN/.lock for as long as it runs, with its PID written in the file, so
//     a second trainer on the same folder stops at once, naming the first;
//   - a fresh run (or a resume into another --out) refuses a folder that
//     holds any run's files, readable or not;
//   - nothing in it is a link out of it (checkRunLinks): a run reads and
//     writes its own folder only;
//   - what a killed write left behind (checkpoints/.epoch-N.tmp-*,
//     .latest.json.tmp-*, ...) is removed once the lock is held.

const lockFile = ".lock"

// runFiles are the names whose presence makes a folder a run's.
var runFiles = []string{"config.yaml", "metrics.jsonl", latestFile, runIDFile, "checkpoints"}

// runFolder is a run folder claimed by this process.
type runFolder struct {
	dir     string
	lock    *os.File
	created bool // the folder did not exist before the claim
}

// claimRunFolder creates dir if need be, locks it, and checks that it may
// be written: sameRun says it holds the run being continued (a resume into
// its own folder); otherwise it must hold no run's files. It removes the
// leftovers of killed writes, saying so on out. A refused claim changes
// nothing on disk.
func claimRunFolder(dir string, sameRun bool, out io.Writer) (*runFolder, error) {
	if err := checkRunLinks(dir); err != nil { // before the lock, which could be such a link
		return nil, err
	}
	_, statErr := os.Stat(dir)
	rf := &runFolder{dir: dir, created: errors.Is(statErr, fs.ErrNotExist)}
	lockPath := filepath.Join(dir, lockFile)
	// A folder in use says so first, whatever it holds.
	if f, err := os.OpenFile(lockPath, os.O_RDWR, 0); err == nil {
		rf.lock = f
		if err := rf.takeLock(out); err != nil {
			return nil, err
		}
	}
	if !sameRun {
		if found := runFilesIn(dir); len(found) > 0 {
			rf.release()
			return nil, &usedFolderError{Dir: dir, Found: found}
		}
	}
	if rf.lock == nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("run folder: %w", err)
		}
		f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			rf.abandon()
			return nil, fmt.Errorf("run folder %s: cannot open its lock file: %w", dir, err)
		}
		rf.lock = f
		if err := rf.takeLock(out); err != nil {
			return nil, err
		}
		// Another trainer may have written the folder between the look
		// above and the lock.
		if found := runFilesIn(dir); !sameRun && len(found) > 0 {
			rf.release()
			return nil, &usedFolderError{Dir: dir, Found: found}
		}
	}
	if err := rf.lock.Truncate(0); err == nil {
		rf.lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if removed := removeLeftovers(dir); len(removed) > 0 {
		fmt.Fprintf(out, "removed %d leftovers of an interrupted write: %s\n", len(removed), strings.Join(removed, ", "))
	}
	return rf, nil
}

// takeLock locks rf.lock, or closes it and says who holds it.
func (rf *runFolder) takeLock(out io.Writer) error {
	f := rf.lock
	held, err := lockExclusive(f)
	switch {
	case errors.Is(err, errNoLocking):
		fmt.Fprintf(out, "note: run folders cannot be locked on this system (%v): do not start two trainers on %s\n", err, rf.dir)
	case err != nil:
		rf.abandon()
		return fmt.Errorf("run folder %s: cannot lock %s: %w", rf.dir, f.Name(), err)
	case !held:
		holder := "another process"
		if b, _ := os.ReadFile(f.Name()); len(strings.TrimSpace(string(b))) > 0 {
			holder = "PID " + strings.TrimSpace(string(b))
		}
		f.Close()
		rf.lock = nil
		return fmt.Errorf("run folder %s is in use by another trainer (%s holds %s): wait for it to end, or choose another --out", rf.dir, holder, f.Name())
	}
	return nil
}

// usedFolderError is a run folder that already holds a run's files.
type usedFolderError struct {
	Dir   string
	Found []string
}

func (e *usedFolderError) Error() string {
	if !slices.Contains(e.Found, latestFile) {
		return fmt.Sprintf("run folder %s already holds a run's files (%s) but no checkpoint to continue: remove them, or choose another --out; nothing was changed", e.Dir, strings.Join(e.Found, ", "))
	}
	return fmt.Sprintf("run folder %s already holds a run (%s): continue it with --resume %s, or choose another --out; nothing was changed", e.Dir, strings.Join(e.Found, ", "), e.Dir)
}

// HoldsRun reports whether dir holds any run's files, so that a fresh run
// into it would be refused.
func HoldsRun(dir string) bool { return len(runFilesIn(dir)) > 0 }

// runFilesIn lists the run files dir holds.
func runFilesIn(dir string) []string {
	var found []string
	for _, name := range runFiles {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			if name == "checkpoints" {
				name += "/"
			}
			found = append(found, name)
		}
	}
	return found
}

// removeLeftovers removes the temporary files and folders that
// writeFileAtomic and saveCheckpoint leave when killed mid-write, and
// returns their paths relative to dir.
func removeLeftovers(dir string) []string {
	var removed []string
	for _, d := range []string{dir, filepath.Join(dir, "checkpoints")} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if isLeftover(e.Name()) && os.RemoveAll(filepath.Join(d, e.Name())) == nil {
				rel, _ := filepath.Rel(dir, filepath.Join(d, e.Name()))
				removed = append(removed, rel)
			}
		}
	}
	return removed
}

// isLeftover matches the temporary names ".NAME.tmp-RANDOM".
func isLeftover(name string) bool {
	i := strings.LastIndex(name, ".tmp-")
	return strings.HasPrefix(name, ".") && i > 1 && i+len(".tmp-") < len(name)
}

// startFiles are what a run writes into its folder at its start, before
// its first checkpoint.
var startFiles = []string{"config.yaml", "metrics.jsonl"}

// takeBack removes what a fresh run wrote at its start (startFiles), for a
// run that ends before its first checkpoint (an error in set-up, an
// interrupt before the first step), so that the same command can simply be
// run again; release then removes the folder too when the claim made it.
func (rf *runFolder) takeBack() {
	for _, name := range startFiles {
		os.Remove(filepath.Join(rf.dir, name))
	}
}

// release unlocks the folder. A folder this claim created and that holds
// nothing but the lock file is removed with it.
func (rf *runFolder) release() {
	if rf == nil || rf.lock == nil {
		return
	}
	if rf.created {
		if entries, err := os.ReadDir(rf.dir); err == nil && len(entries) == 1 && entries[0].Name() == lockFile {
			os.Remove(rf.lock.Name())
			os.Remove(rf.dir)
		}
	}
	rf.lock.Close() // closing the descriptor releases the flock
	rf.lock = nil
}

// abandon undoes a claim that failed before the lock was taken.
func (rf *runFolder) abandon() {
	if rf.lock != nil {
		rf.lock.Close()
		rf.lock = nil
	}
	if rf.created {
		os.Remove(filepath.Join(rf.dir, lockFile))
		os.Remove(rf.dir)
	}
}

// linkOutError is a path in a run folder that is a link leading out of it.
type linkOutError struct {
	Run, Path, Target string
}

func (e *linkOutError) Error() string {
	return fmt.Sprintf("run folder %s: %s is a link to %s, outside the run folder; a run reads and writes only inside its own folder (through such a link it would read, prune or overwrite another folder's files): replace the link with the folder or file itself, or choose another --out; nothing was changed", e.Run, e.Path, e.Target)
}

// inRun is run/rel after checking that no link on the way to it leads out
// of run (run itself, the folder the user named, may be a link). What does
// not exist yet is fine: it will be made inside.
func inRun(run, rel string) (string, error) {
	p := filepath.Join(run, rel)
	root, err := filepath.EvalSymlinks(run)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil // nothing there yet
	}
	if err != nil {
		return "", fmt.Errorf("run folder %s: %w", run, err)
	}
	top := filepath.Clean(run)
	at := p // the longest part of p that exists
	for at != top {
		if _, err := os.Lstat(at); err == nil {
			break
		}
		at = filepath.Dir(at)
	}
	real, err := filepath.EvalSymlinks(at)
	if err != nil {
		if target, lerr := os.Readlink(at); lerr == nil {
			return "", &linkOutError{Run: run, Path: at, Target: target + " (which does not exist)"}
		}
		return "", fmt.Errorf("run folder %s: %w", run, err)
	}
	if r, err := filepath.Rel(root, real); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		if abs, err := filepath.Abs(real); err == nil {
			real = abs
		}
		return "", &linkOutError{Run: run, Path: at, Target: real}
	}
	return p, nil
}

// runEntries are the names a run reads or writes at its folder's top.
var runEntries = []string{lockFile, "config.yaml", "metrics.jsonl", latestFile, runIDFile, "checkpoints", "eval", bestDir}

// checkRunLinks refuses a run folder with a link out of it among the
// entries a run reads or writes: runEntries, what checkpoints/, eval/ and
// best/ hold, and each checkpoint's files. A checkpoint folder outside any
// run is checked the same way, its files against itself.
func checkRunLinks(run string) error {
	if _, err := os.Stat(filepath.Join(run, stateFile)); err == nil {
		for _, f := range []string{weightsFile, optimFile, stateFile} {
			if _, err := inRun(run, f); err != nil {
				return err
			}
		}
	}
	for _, name := range runEntries {
		if _, err := inRun(run, name); err != nil {
			return err
		}
	}
	for _, sub := range []string{"checkpoints", "eval", bestDir} {
		entries, _ := os.ReadDir(filepath.Join(run, sub))
		for _, e := range entries {
			rel := filepath.Join(sub, e.Name())
			if _, err := inRun(run, rel); err != nil {
				return err
			}
			if sub != "checkpoints" || !e.IsDir() {
				continue
			}
			for _, f := range []string{weightsFile, optimFile, stateFile} {
				if _, err := inRun(run, filepath.Join(rel, f)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// runIDFile holds the run's id, which every checkpoint of the run records:
// made when the run starts, written with its first checkpoint, kept across
// resumes into the same folder.
const runIDFile = "run.json"

type runIDJSON struct {
	RunID string `json:"run_id"`
}

// newRunID is a fresh run id: 16 random hex digits.
func newRunID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// readRunID reads RUN/run.json: "" when there is none (a folder from before
// run ids, or one whose run wrote no checkpoint yet).
func readRunID(run string) (string, error) {
	p := filepath.Join(run, runIDFile)
	b, err := readSmallFile(context.Background(), p, maxPointerFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var j runIDJSON
	if err := json.Unmarshal(b, &j); err != nil || j.RunID == "" {
		return "", fmt.Errorf("%s is corrupt (it should hold {\"run_id\": \"...\"}, the id its checkpoints' state.json record as run_id): restore it from a checkpoint's state.json", p)
	}
	return j.RunID, nil
}

// keepRunID writes RUN/run.json with id unless it exists.
func keepRunID(run, id string) error {
	if id == "" {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(run, runIDFile)); err == nil {
		return nil
	}
	b, _ := json.Marshal(runIDJSON{RunID: id})
	if err := os.MkdirAll(run, 0o755); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(run, runIDFile), append(b, '\n'))
}
