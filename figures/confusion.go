// Package figures draws a run's figures as PNG images, with gonum/plot:
// the heat map of an evaluation's confusion matrix. It knows nothing of
// runs or files; the trainer hands it the counts and writes the bytes.
package figures

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
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

// MaxCells is the most cells a side of the confusion figure has. Up to
// that many classes each class is a cell; past it consecutive classes are
// grouped, ceil(classes/MaxCells) to a cell, so that the figure stays
// under ConfusionSide(MaxCells) = 1860 px whatever the class count (1000
// classes used to draw an 8260 px figure of 818 MB, 10000 would have
// needed 26 GB). The CSV beside it keeps every count.
const MaxCells = 200

// numbersUpTo is the largest class count whose cells show their counts.
const numbersUpTo = 20

// Confusion is a confusion matrix being drawn: rows added one true class at
// a time (AddRow), then PNG. It holds a cell per group of classes, never
// the whole matrix, so a 10000-class matrix read from its CSV row by row
// costs no more than a 200-class one.
type Confusion struct {
	classes     []string
	group       int         // classes per cell
	cells       int         // cells a side
	share       [][]float64 // [row cell][column cell]: sum over the row cell's classes of their share predicted into the column cell
	rowsIn      []int       // per row cell: classes with samples
	counts      [][]int     // the counts themselves, up to numbersUpTo classes
	hits, total int
}

// NewConfusion starts the figure of a matrix over classes (the true
// classes are the rows, the predicted ones the columns, both in this
// order).
func NewConfusion(classes []string) *Confusion {
	n := len(classes)
	g := max(1, (n+MaxCells-1)/MaxCells)
	cells := (n + g - 1) / g
	c := &Confusion{classes: classes, group: g, cells: cells, share: make([][]float64, cells), rowsIn: make([]int, cells)}
	for i := range c.share {
		c.share[i] = make([]float64, cells)
	}
	if n <= numbersUpTo {
		c.counts = make([][]int, n)
	}
	return c
}

// AddRow adds true class i's counts, one per predicted class. counts is
// not kept.
func (c *Confusion) AddRow(i int, counts []int) error {
	n := len(c.classes)
	if i < 0 || i >= n || len(counts) != n {
		return fmt.Errorf("figures: row %d of %d counts, for %d classes", i, len(counts), n)
	}
	sum := 0
	for _, v := range counts {
		if v < 0 {
			return fmt.Errorf("figures: row %d has a negative count %d", i, v)
		}
		sum += v
	}
	if c.counts != nil {
		c.counts[i] = append([]int(nil), counts...)
	}
	c.hits, c.total = c.hits+counts[i], c.total+sum
	if sum == 0 {
		return nil // a class with no samples: a row of zeros, not NaN
	}
	row := c.share[i/c.group]
	for j, v := range counts {
		row[j/c.group] += float64(v) / float64(sum)
	}
	c.rowsIn[i/c.group]++
	return nil
}

// ConfusionSide is the side in pixels of the square figure for n classes:
// a margin for the names and the title, and a cell of 8 to 40 pixels per
// cell (about 800 pixels of matrix from 20 to 100 classes, at most 1600).
func ConfusionSide(n int) int {
	g := max(1, (n+MaxCells-1)/MaxCells)
	cells := (n + g - 1) / g
	return 260 + cells*cellPx(cells)
}

func cellPx(cells int) int { return min(40, max(8, 800/max(cells, 1))) }

// ConfusionMemory is an upper bound, in bytes, of what drawing the figure
// of n classes allocates: the cells, the class names' labels, the RGBA
// canvas and what the rasteriser and the PNG encoder take beside it
// (measured: TestConfusionMemoryIsBounded).
func ConfusionMemory(n int) float64 {
	side := float64(ConfusionSide(n))
	g := max(1, (n+MaxCells-1)/MaxCells)
	cells := float64((n + g - 1) / g)
	return 6*side*side*4 + 3*cells*cells*8 + float64(n)*256 + 64<<20
}

// PNG draws the matrix: a heat map of each true class's share predicted
// as each class (so that a class with few samples is as visible as a
// large one), true classes top to bottom, predicted left to right, with
// the counts written in the cells up to 20 classes. Past 50 cells only
// every k-th is named on the axes; past MaxCells classes a cell is a group
// of classes and its colour the mean share of the group's true classes
// predicted into the column's group. what names the matrix in the title
// ("epoch 3").
func (c *Confusion) PNG(what string) ([]byte, error) {
	n := len(c.classes)
	if n == 0 {
		return nil, fmt.Errorf("figures: no classes")
	}
	cells := c.cells
	grid := c.meanShares()

	p := plot.New()
	p.Title.Text = c.title(what)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text, p.Y.Label.Text = "predicted class", "true class"
	if c.group > 1 {
		p.X.Label.Text = fmt.Sprintf("predicted class (%d to a cell, named by the first)", c.group)
		p.Y.Label.Text = fmt.Sprintf("true class (%d to a cell, named by the first)", c.group)
	}
	hm := plotter.NewHeatMap(heatGrid(grid), bluePalette{})
	hm.Min, hm.Max = 0, 1
	p.Add(hm)
	p.X.Min, p.X.Max = -0.5, float64(cells)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(cells)-0.5

	cell := cellPx(cells)
	every := int(math.Ceil(16 / float64(cell))) // names at least 16 px apart
	if cells <= 50 {
		every = 1
	}
	fontSize := vg.Length(min(10, max(7, cell)))
	p.X.Tick.Marker = classTicks{c.classes, c.group, cells, every, false}
	p.Y.Tick.Marker = classTicks{c.classes, c.group, cells, every, true}
	p.X.Tick.Label.Font.Size, p.Y.Tick.Label.Font.Size = fontSize, fontSize
	p.X.Tick.Label.Rotation = math.Pi / 2
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = text.XRight, text.YCenter

	if c.counts != nil {
		l, err := c.countLabels(grid, text.Style{Color: color.Black, Font: p.X.Tick.Label.Font, XAlign: text.XCenter, YAlign: text.YCenter, Handler: p.X.Tick.Label.Handler})
		if err != nil {
			return nil, err
		}
		p.Add(l)
	}

	side := vg.Length(ConfusionSide(n))
	cv := vgimg.NewWith(vgimg.UseWH(side, side), vgimg.UseDPI(72)) // 72 dpi: a point is a pixel
	p.Draw(draw.New(cv))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: cv}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// meanShares is the colour of each cell: the mean, over the row cell's
// classes with samples, of their share predicted into the column cell (0
// where the row cell has no samples).
func (c *Confusion) meanShares() [][]float64 {
	grid := make([][]float64, c.cells)
	for i, row := range c.share {
		grid[i] = make([]float64, c.cells)
		for j, v := range row {
			if c.rowsIn[i] > 0 {
				grid[i][j] = v / float64(c.rowsIn[i])
			}
		}
	}
	return grid
}

// title is the figure's title: what and the top-1 it shows, then what the
// colour (and the numbers, when drawn) mean.
func (c *Confusion) title(what string) string {
	top1 := fmt.Sprintf("Confusion matrix, %s: val top-1 %.1f%% of %d", what, 100*float64(c.hits)/float64(max(c.total, 1)), c.total)
	switch {
	case c.group > 1:
		return fmt.Sprintf("%s\n%d classes, %d to a cell; colour: the mean share of a cell's true classes predicted into its column", top1, len(c.classes), c.group)
	case c.counts != nil:
		return top1 + "\ncolour: share of each true class's samples; numbers: sample counts"
	default:
		return top1 + "\ncolour: share of each true class's samples"
	}
}

// countLabels writes each count in its cell in style st, in white on the
// cells darker than 0.55 of grid.
func (c *Confusion) countLabels(grid [][]float64, st text.Style) (*plotter.Labels, error) {
	n := len(c.classes)
	var xys plotter.XYs
	var labels []string
	var styles []text.Style
	for i, row := range c.counts {
		for j, v := range row {
			xys = append(xys, plotter.XY{X: float64(j), Y: float64(n - 1 - i)})
			labels = append(labels, strconv.Itoa(v))
			s := st
			if grid[i][j] > 0.55 {
				s.Color = color.White
			}
			styles = append(styles, s)
		}
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return nil, err
	}
	l.TextStyle = styles
	return l, nil
}

// heatGrid is the matrix of shares as a heat map grid: column c is the
// predicted cell, grid row r counts from the bottom, so the first true
// class is drawn at the top.
type heatGrid [][]float64

func (g heatGrid) Dims() (c, r int)   { return len(g), len(g) }
func (g heatGrid) Z(c, r int) float64 { return g[len(g)-1-r][c] }
func (g heatGrid) X(c int) float64    { return float64(c) }
func (g heatGrid) Y(r int) float64    { return float64(r) }

// classTicks names every k-th cell at its centre, by its first class.
type classTicks struct {
	names    []string
	group    int // classes per cell
	cells    int
	every    int
	reversed bool // the y axis: the first class at the top
}

func (t classTicks) Ticks(_, _ float64) []plot.Tick {
	ticks := make([]plot.Tick, 0, t.cells/t.every+1)
	for i := 0; i < t.cells; i += t.every {
		v := float64(i)
		if t.reversed {
			v = float64(t.cells - 1 - i)
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: tickLabel(t.names[i*t.group])})
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
