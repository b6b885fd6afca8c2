package trainer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"stoke/config"
	"stoke/data"
)

// What a resume checks beyond the config: that the numbers it goes on to
// compute are those the uninterrupted run would have computed. The same
// class names (byte for byte), the same files, the same JPEG decoder.

// resolvedDecoder names the JPEG decoder data.decoder resolves to on this
// machine: "libjpeg-turbo" or "image/jpeg", as recorded in state.json.
func resolvedDecoder(kind string) string {
	if strings.HasPrefix(data.DecoderName(kind), "libjpeg-turbo") {
		return "libjpeg-turbo"
	}
	return "image/jpeg"
}

// sameInputs refuses a resume whose dataset or decoder is not the
// checkpoint's: either would change every later number. The JPEG decoder
// matters only where the dataset holds JPEGs (jpegs, from hasJPEG): an
// all-PNG set decodes with image/png whatever data.decoder resolves to.
func sameInputs(st *checkpointState, root string, classes []string, files data.FileList, jpegs bool, decoder, decoderSetting string) error {
	if !slices.Equal(st.Classes, classes) {
		return fmt.Errorf("cannot resume from %s: it was trained on classes %s, the dataset at %s has %s", st.Dir, showClasses(st.Classes), root, showClasses(classes))
	}
	if st.Unverified {
		return nil
	}
	if st.Dataset != files {
		what := fmt.Sprintf("%d train / %d val images then, %d / %d now", st.Dataset.Train, st.Dataset.Val, files.Train, files.Val)
		if st.Dataset.Train == files.Train && st.Dataset.Val == files.Val {
			what = fmt.Sprintf("as many images (%d train / %d val), but other files or sizes: file-list SHA-256 %.12s… then, %.12s… now", files.Train, files.Val, st.Dataset.SHA256, files.SHA256)
		}
		return fmt.Errorf("cannot resume from %s: the dataset at %s is not the one it was trained on (%s); resuming would not continue the same run: restore the dataset, or start a new run", st.Dir, root, what)
	}
	if jpegs && st.Decoder != decoder {
		return fmt.Errorf("cannot resume from %s: its run decoded JPEGs with %s, this one would use %s (data.decoder %s: %s), which gives other pixels and so other numbers: run where the checkpoint's decoder is available (libjpeg-turbo: apt-get install libturbojpeg0), or start a new run", st.Dir, st.Decoder, decoder, decoderSetting, data.DecoderName(decoderSetting))
	}
	return nil
}

// hasJPEG reports whether the sets hold a JPEG, judged by extension as
// decodersLine judges (a file that is not .png is a .jpg or .jpeg; the
// loader picks a decoder by the content, and a .png holding a JPEG is rare).
// The resumed run's files are the checkpoint's (sameInputs compares their
// list first), so this is true for both runs or for neither.
func hasJPEG(sets ...*data.Index) bool {
	for _, set := range sets {
		for _, s := range set.Samples {
			if !strings.EqualFold(filepath.Ext(s.Path), ".png") {
				return true
			}
		}
	}
	return false
}

func showClasses(c []string) string {
	shown := make([]string, len(c))
	for i, name := range c {
		shown[i] = fmt.Sprintf("%q", name)
	}
	return "[" + strings.Join(shown, " ") + "]"
}

// epochsDone says how far a checkpoint got: "3 epochs", "3 epochs and 17
// batches".
func epochsDone(st *checkpointState) string {
	s := fmt.Sprintf("%d epochs", st.Epoch)
	if st.Partial.Batches > 0 {
		s += fmt.Sprintf(" and %d batches of epoch %d", st.Partial.Batches, st.Epoch+1)
	}
	return s
}

// sameFolder reports whether a and b name the same folder, also through a
// different spelling or a link; two folders that do not exist are the same
// when their cleaned absolute paths are.
func sameFolder(a, b string) bool {
	fa, ea := os.Stat(a)
	fb, eb := os.Stat(b)
	if ea == nil && eb == nil {
		return os.SameFile(fa, fb)
	}
	aa, _ := filepath.Abs(a)
	ab, _ := filepath.Abs(b)
	return aa == ab
}

// ResumeBase is the config `--resume path` continues with on a launch of
// ranks processes, before the command line: the run folder's own
// config.yaml (the run as last asked for), or the checkpoint's config where
// config.yaml is missing or does not parse; and the run folder the path
// belongs to. A checkpoint records the global batch (data.batch_size x
// ranks); where the launch has another number of ranks than the run had,
// data.batch_size is the per-rank batch that keeps that global batch, so
// that 1 rank x 64 continues a run of 2 x 32 (docs/distributed.md).
//
// It reads the checkpoint's state.json only: the trainer reads and checks
// the whole checkpoint (its tensors and their SHA-256) once, when it
// resumes, and refuses it there if it is damaged.
func ResumeBase(path string, ranks int) (config.Config, string, error) {
	run := runOf(path)
	cfg, cerr := config.Load(filepath.Join(run, "config.yaml"))
	ckpt, serr := checkpointConfig(path)
	switch {
	case serr != nil && cerr != nil:
		if _, err := loadCheckpointState(context.Background(), path); err != nil {
			return config.Config{}, "", err // its message says what path is and what can be resumed
		}
		return config.Config{}, "", serr
	case serr != nil:
		return cfg, run, nil // the trainer reports the checkpoint's problem, after the command line's
	case cerr != nil:
		cfg = ckpt
	}
	b, err := config.PerRankBatch(ckpt.Data.BatchSize, ranks)
	if err != nil {
		return config.Config{}, "", fmt.Errorf("cannot resume %s on %d ranks: %w", path, ranks, err)
	}
	cfg.Data.BatchSize = b
	return cfg, run, nil
}

// checkpointConfig is the config recorded in the state.json of the
// checkpoint path names (a run folder's latest, or a checkpoint folder),
// read without its tensors, after the same check for links out of the run
// that loadCheckpointState makes.
func checkpointConfig(path string) (config.Config, error) {
	if err := checkRunLinks(runOf(path)); err != nil {
		return config.Config{}, err
	}
	dir, err := readLatest(path)
	if err != nil {
		return config.Config{}, err
	}
	if dir == "" {
		dir = path
	}
	sj, err := readStateJSON(context.Background(), dir)
	if err != nil {
		return config.Config{}, err
	}
	return config.Parse([]byte(sj.Config), filepath.Join(dir, stateFile)+" (config)")
}
