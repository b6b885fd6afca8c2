package trainer

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// confusionPNG is the figure of the run's last evaluation, beside the
// per-epoch CSVs: RUN/eval/confusion.png.
const confusionPNG = "confusion.png"

// writeConfusionPNG draws the newest RUN/eval/confusion-epoch-NNNN.csv as
// RUN/eval/confusion.png: a heat map of the row-normalised matrix (each
// true class's share predicted as each class, so that a class with few
// samples is as visible as a large one), true classes top to bottom,
// predicted left to right, with the counts written in the cells while
// there are at most 20 classes. Past 50 classes only every k-th class is
// named on the axes. It is called once, at the end of a run; a run that
// wrote no CSV (the backend gave no predictions) gets no figure. The
// checkpoints are written before it, so a failure here loses none: the
// error says so.
func writeConfusionPNG(run string) error {
	epoch, csvPath, ok, err := newestConfusionCSV(run)
	if err != nil || !ok {
		return err
	}
	classes, counts, err := readConfusionCSV(csvPath)
	if err != nil {
		return fmt.Errorf("confusion matrix PNG: %s: %w", csvPath, err)
	}
	png, err := renderConfusion(classes, counts, fmt.Sprintf("epoch %d", epoch))
	if err == nil {
		err = writeFileAtomic(filepath.Join(run, "eval", confusionPNG), png)
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
	entries, err := os.ReadDir(filepath.Join(run, "eval"))
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
// then per true class its name, counts, sample count and accuracy.
func readConfusionCSV(path string) ([]string, [][]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, nil, err
	}
	if len(rows) < 1 || len(rows[0]) < 3 {
		return nil, nil, fmt.Errorf("no header row")
	}
	classes := rows[0][1 : len(rows[0])-2]
	n := len(classes)
	if len(rows) != n+1 {
		return nil, nil, fmt.Errorf("%d classes in the header but %d rows", n, len(rows)-1)
	}
	counts := make([][]int, n)
	for i, row := range rows[1:] {
		if len(row) != n+3 {
			return nil, nil, fmt.Errorf("row %d has %d fields, want %d", i+1, len(row), n+3)
		}
		counts[i] = make([]int, n)
		for j := range n {
			if counts[i][j], err = strconv.Atoi(row[1+j]); err != nil {
				return nil, nil, fmt.Errorf("row %d: %w", i+1, err)
			}
		}
	}
	return classes, counts, nil
}

// confusionPNGSide is the side in pixels of the square figure for n
// classes: a margin for the names and the title, and a cell of 8 to 40
// pixels per class (about 800 pixels of matrix from 20 to 100 classes).
func confusionPNGSide(n int) int {
	return 260 + n*confusionCell(n)
}

func confusionCell(n int) int { return min(40, max(8, 800/max(n, 1))) }

// renderConfusion draws counts (true class by row) as a PNG.
func renderConfusion(classes []string, counts [][]int, what string) ([]byte, error) {
	n := len(classes)
	if n == 0 {
		return nil, fmt.Errorf("no classes")
	}
	share := make([][]float64, n)
	hits, total := 0, 0
	for i, row := range counts {
		share[i] = make([]float64, n)
		sum := 0
		for _, c := range row {
			sum += c
		}
		for j, c := range row {
			if sum > 0 {
				share[i][j] = float64(c) / float64(sum)
			}
		}
		hits, total = hits+row[i], total+sum
	}

	p := plot.New()
	p.Title.Text = fmt.Sprintf("Confusion matrix, %s: val top-1 %.1f%% of %d (row-normalised)", what, 100*float64(hits)/float64(max(total, 1)), total)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = "predicted class"
	p.Y.Label.Text = "true class"
	hm := plotter.NewHeatMap(confusionGrid(share), bluePalette{})
	hm.Min, hm.Max = 0, 1
	p.Add(hm)
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5

	cell := confusionCell(n)
	every := int(math.Ceil(16 / float64(cell))) // names at least 16 px apart
	if n <= 50 {
		every = 1
	}
	fontSize := vg.Length(min(10, max(7, cell)))
	p.X.Tick.Marker = classTicks{classes, every, false}
	p.Y.Tick.Marker = classTicks{classes, every, true}
	p.X.Tick.Label.Font.Size, p.Y.Tick.Label.Font.Size = fontSize, fontSize
	p.X.Tick.Label.Rotation = math.Pi / 2
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = text.XRight, text.YCenter

	if n <= 20 {
		var xys plotter.XYs
		var labels []string
		var styles []text.Style
		for i, row := range counts {
			for j, c := range row {
				xys = append(xys, plotter.XY{X: float64(j), Y: float64(n - 1 - i)})
				labels = append(labels, strconv.Itoa(c))
				st := text.Style{Color: color.Black, Font: p.X.Tick.Label.Font, XAlign: text.XCenter, YAlign: text.YCenter, Handler: p.X.Tick.Label.Handler}
				if share[i][j] > 0.55 {
					st.Color = color.White
				}
				styles = append(styles, st)
			}
		}
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return nil, err
		}
		l.TextStyle = styles
		p.Add(l)
	}

	side := vg.Length(confusionPNGSide(n))
	c := vgimg.NewWith(vgimg.UseWH(side, side), vgimg.UseDPI(72)) // 72 dpi: a point is a pixel
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// confusionGrid is the row-normalised matrix as a heat map grid: column c
// is the predicted class, grid row r counts from the bottom, so the first
// true class is drawn at the top.
type confusionGrid [][]float64

func (g confusionGrid) Dims() (c, r int)   { return len(g), len(g) }
func (g confusionGrid) Z(c, r int) float64 { return g[len(g)-1-r][c] }
func (g confusionGrid) X(c int) float64    { return float64(c) }
func (g confusionGrid) Y(r int) float64    { return float64(r) }

// classTicks names every k-th class at its cell's centre.
type classTicks struct {
	names    []string
	every    int
	reversed bool // the y axis: class 0 at the top
}

func (t classTicks) Ticks(_, _ float64) []plot.Tick {
	n := len(t.names)
	ticks := make([]plot.Tick, 0, n/t.every+1)
	for i := 0; i < n; i += t.every {
		v := float64(i)
		if t.reversed {
			v = float64(n - 1 - i)
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: tickLabel(t.names[i])})
	}
	return ticks
}

// tickLabel keeps a class name short and printable: folder names can be
// any bytes, and a long one would eat the figure.
func tickLabel(s string) string {
	r := []rune(strings.ToValidUTF8(s, "?"))
	for i, c := range r {
		if !unicode.IsPrint(c) {
			r[i] = '?'
		}
	}
	if len(r) > 24 {
		r = append(r[:23], '…')
	}
	return string(r)
}

// bluePalette runs from white (0) to a dark blue (1).
type bluePalette struct{}

func (bluePalette) Colors() []color.Color {
	cs := make([]color.Color, 256)
	for i := range cs {
		f := float64(i) / 255
		cs[i] = color.RGBA{R: uint8(255 - f*(255-8)), G: uint8(255 - f*(255-48)), B: uint8(255 - f*(255-107)), A: 255}
	}
	return cs
}
