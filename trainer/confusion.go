package trainer

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// confusion counts validation samples by true class (row) and predicted
// class (column), growing to the largest class seen.
type confusion [][]int

func (c *confusion) add(labels, pred []int32) {
	for i, y := range labels {
		c.addN(y, pred[i], 1)
	}
}

// addN counts n samples of class y predicted as p.
func (c *confusion) addN(y, p int32, n int) {
	for len(*c) <= int(y) {
		*c = append(*c, nil)
	}
	row := &(*c)[y]
	for len(*row) <= int(p) {
		*row = append(*row, 0)
	}
	(*row)[p] += n
}

// writeConfusion writes RUN/eval/confusion-epoch-NNNN.csv: a header of the
// predicted classes, then per true class its counts, its sample count and
// its accuracy (recall), as torchvision-reference users tabulate after a
// run. Nothing is written when c is nil (the backend gives no predictions).
// The rows are streamed to the file (a temporary one, renamed when whole),
// so a 10000-class matrix needs no second copy of itself as text.
func writeConfusion(run string, epoch int, classes []string, c confusion) error {
	if c == nil {
		return nil
	}
	dir, err := inRun(run, "eval") // not through a link out of the run
	if err != nil {
		return fmt.Errorf("confusion matrix: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("confusion matrix: %w", err)
	}
	return writeAtomicStream(filepath.Join(dir, fmt.Sprintf("confusion-epoch-%04d.csv", epoch)), func(out io.Writer) error {
		w := csv.NewWriter(out)
		w.Write(append(append([]string{"true \\ predicted"}, classes...), "samples", "accuracy"))
		rec := make([]string, 0, len(classes)+3)
		for i, name := range classes {
			rec = append(rec[:0], name)
			total, hit := 0, 0
			for j := range classes {
				n := 0
				if i < len(c) && j < len(c[i]) {
					n = c[i][j]
				}
				total += n
				if i == j {
					hit = n
				}
				rec = append(rec, strconv.Itoa(n))
			}
			acc := ""
			if total > 0 {
				acc = strconv.FormatFloat(float64(hit)/float64(total), 'f', 4, 64)
			}
			w.Write(append(rec, strconv.Itoa(total), acc))
		}
		w.Flush()
		return w.Error()
	})
}

// writeAtomicStream is writeFileAtomic for content written by write: a
// temporary file beside path, synced, then renamed over it, so a reader
// sees the old file or the whole new one.
func writeAtomicStream(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	bw := bufio.NewWriterSize(f, 1<<20)
	err = f.Chmod(0o644)
	if err == nil {
		err = write(bw)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}
