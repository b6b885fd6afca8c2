package trainer

import (
	"bytes"
	"encoding/csv"
	"fmt"
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
func writeConfusion(run string, epoch int, classes []string, c confusion) error {
	if c == nil {
		return nil
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(append(append([]string{"true \\ predicted"}, classes...), "samples", "accuracy"))
	for i, name := range classes {
		rec := []string{name}
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
	dir, err := inRun(run, "eval") // not through a link out of the run
	if err != nil {
		return fmt.Errorf("confusion matrix: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("confusion matrix: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, fmt.Sprintf("confusion-epoch-%04d.csv", epoch)), buf.Bytes())
}
