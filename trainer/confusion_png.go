package trainer

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"stoke/figures"
)

// confusionPNG is the figure of the run's last evaluation, beside the
// per-epoch CSVs: RUN/eval/confusion.png.
const confusionPNG = "confusion.png"

// writeConfusionPNG draws the newest RUN/eval/confusion-epoch-NNNN.csv as
// RUN/eval/confusion.png (figures.Confusion: a heat map of each true
// class's share predicted as each class, at most figures.MaxCells cells a
// side, grouping classes past that). The CSV is read a row at a time, so
// the figure of 10000 classes costs what that of 200 does. It is called
// once, at the end of a run; a run that wrote no CSV (the backend gave no
// predictions) gets no figure. The checkpoints are written before it, so a
// failure here loses none: the error says so.
func writeConfusionPNG(run string) error {
	epoch, csvPath, ok, err := newestConfusionCSV(run)
	if err != nil || !ok {
		return err
	}
	var fig *figures.Confusion
	_, err = readConfusionCSV(csvPath, func(classes []string) { fig = figures.NewConfusion(classes) }, func(i int, counts []int) error {
		return fig.AddRow(i, counts)
	})
	if err != nil {
		return fmt.Errorf("confusion matrix PNG: %s: %w", csvPath, err)
	}
	png, err := fig.PNG(fmt.Sprintf("epoch %d", epoch))
	if err == nil {
		var dst string // not through a link out of the run
		if dst, err = inRun(run, filepath.Join("eval", confusionPNG)); err == nil {
			err = writeFileAtomic(dst, png)
		}
	}
	if err != nil {
		kept := "the run's checkpoints are unaffected"
		if dir, ok := latestCheckpoint(run); ok {
			kept += " (latest: " + dir + ")"
		}
		return fmt.Errorf("confusion matrix PNG %s: %w; %s", filepath.Join(run, "eval", confusionPNG), err, kept)
	}
	return nil
}

// newestConfusionCSV finds the CSV of the highest epoch in RUN/eval.
func newestConfusionCSV(run string) (epoch int, path string, ok bool, err error) {
	dir, err := inRun(run, "eval")
	if err != nil {
		return 0, "", false, fmt.Errorf("confusion matrix PNG: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("confusion matrix PNG: %w", err)
	}
	for _, e := range entries {
		num, found := strings.CutPrefix(e.Name(), "confusion-epoch-")
		num, isCSV := strings.CutSuffix(num, ".csv")
		n, aerr := strconv.Atoi(num)
		if found && isCSV && aerr == nil && n > epoch && e.Type().IsRegular() {
			epoch, path, ok = n, filepath.Join(run, "eval", e.Name()), true
		}
	}
	return epoch, path, ok, nil
}

// readConfusionCSV reads back what writeConfusion wrote: a header of the
// predicted classes between the corner cell and "samples", "accuracy",
// then per true class its name, counts, sample count and accuracy. It
// calls header with the classes, then row with each true class's counts
// (a slice reused from row to row), and returns the classes.
func readConfusionCSV(path string, header func([]string), row func(i int, counts []int) error) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.ReuseRecord = true
	rec, err := r.Read()
	if err != nil || len(rec) < 3 {
		return nil, fmt.Errorf("no header row")
	}
	classes := append([]string(nil), rec[1:len(rec)-2]...)
	n := len(classes)
	header(classes)
	counts := make([]int, n)
	for i := 0; ; i++ {
		rec, err := r.Read()
		if err == io.EOF {
			if i != n {
				return nil, fmt.Errorf("%d classes in the header but %d rows", n, i)
			}
			return classes, nil
		}
		if err != nil {
			return nil, err
		}
		if i >= n {
			return nil, fmt.Errorf("%d classes in the header but more rows", n)
		}
		if len(rec) != n+3 {
			return nil, fmt.Errorf("row %d has %d fields, want %d", i+1, len(rec), n+3)
		}
		for j := range n {
			if counts[j], err = strconv.Atoi(rec[1+j]); err != nil {
				return nil, fmt.Errorf("row %d: %w", i+1, err)
			}
		}
		if err := row(i, counts); err != nil {
			return nil, fmt.Errorf("row %d: %w", i+1, err)
		}
	}
}
