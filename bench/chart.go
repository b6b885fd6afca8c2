package bench

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// chartPanel is one implementation's bars, drawn on a scale of its own:
// on one shared scale PyTorch's 12-16 s bars left stoke's 3 s split
// unreadable.
type chartPanel struct {
	impl    string
	results []Result
	tallest float64 // seconds per epoch of its tallest bar: the panel's scale
}

// chartPanels groups the results by implementation, in the order they
// come (stoke, then PyTorch).
func chartPanels(results []Result) []chartPanel {
	var ps []chartPanel
	for _, r := range results {
		if len(ps) == 0 || ps[len(ps)-1].impl != r.Impl {
			ps = append(ps, chartPanel{impl: r.Impl})
		}
		p := &ps[len(ps)-1]
		p.results = append(p.results, r)
		p.tallest = max(p.tallest, r.SecPerEpoch)
	}
	return ps
}

// Chart geometry, in points: a panel is its axis plus a slot per bar.
const (
	chartAxisW = 70
	chartSlotW = 95
	chartH     = 340
)

// chart draws seconds per epoch for each result, split into waiting for
// data, copying and computing (stacked bars), one panel per implementation
// side by side, each on its own scale, as chart.png and chart.svg.
func (rep *Report) chart(dir string) error {
	panels := chartPanels(rep.Results)
	if len(panels) == 0 {
		return nil
	}
	var plots []*plot.Plot
	var widths []vg.Length
	var total vg.Length
	for i, pn := range panels {
		p, err := rep.panelPlot(pn, i == 0, len(panels) > 1)
		if err != nil {
			return err
		}
		w := vg.Points(chartAxisW + chartSlotW*float64(max(len(pn.results), 2)))
		plots, widths, total = append(plots, p), append(widths, w), total+w
	}
	for _, ext := range []string{"png", "svg"} {
		var c vg.CanvasWriterTo
		if ext == "png" {
			c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(total, chartH), vgimg.UseDPI(96))}
		} else {
			c = vgsvg.New(total, chartH)
		}
		dc := draw.New(c)
		x := vg.Length(0)
		for i, p := range plots {
			const pad = 10 // points between the panels and round the edges, for the last labels and the titles
			p.Draw(draw.Crop(dc, x+pad/2, -(total-x-widths[i])-pad/2, pad/2, -pad))
			x += widths[i]
		}
		if err := writeCanvas(filepath.Join(dir, "chart."+ext), c); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
	}
	return nil
}

// panelPlot is one panel: its title names the implementation, and says
// that the scale is its own when there are others beside it.
func (rep *Report) panelPlot(pn chartPanel, legend, several bool) (*plot.Plot, error) {
	n := len(pn.results)
	wait, cp, compute, other := make(plotter.Values, n), make(plotter.Values, n), make(plotter.Values, n), make(plotter.Values, n)
	names := make([]string, n)
	for i, r := range pn.results {
		wait[i] = r.WaitShare * r.SecPerEpoch
		cp[i] = r.CopyShare * r.SecPerEpoch
		compute[i] = r.ComputeShare * r.SecPerEpoch
		other[i] = max(0, r.SecPerEpoch-wait[i]-cp[i]-compute[i])
		names[i] = r.Name
	}
	p := plot.New()
	name := map[string]string{"stoke": "stoke", "pytorch": "PyTorch"}[pn.impl]
	if name == "" {
		name = pn.impl
	}
	p.Title.Text = fmt.Sprintf("%s\nseconds per epoch (%s, median of %d)", name, deviceName(rep.Device), rep.Rounds)
	p.Y.Label.Text = "seconds per epoch"
	if several {
		p.Y.Label.Text += " (this panel's scale)"
	}
	p.Legend.Top = true
	w := vg.Points(30)
	var below *plotter.BarChart
	for _, part := range []struct {
		name string
		v    plotter.Values
		c    color.RGBA
	}{
		{"computing", compute, color.RGBA{R: 46, G: 125, B: 50, A: 255}},
		{"copying to device", cp, color.RGBA{R: 30, G: 100, B: 200, A: 255}},
		{"waiting for data", wait, color.RGBA{R: 211, G: 47, B: 47, A: 255}},
		{"other (bookkeeping)", other, color.RGBA{R: 160, G: 160, B: 160, A: 255}},
	} {
		bars, err := plotter.NewBarChart(part.v, w)
		if err != nil {
			return nil, err
		}
		bars.Color = part.c
		bars.LineStyle.Width = 0
		if below != nil {
			bars.StackOn(below)
		}
		below = bars
		p.Add(bars)
		if legend {
			p.Legend.Add(part.name, bars)
		}
	}
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = 0, 1.45*pn.tallest // head room for the legend above the tallest bar
	if pn.tallest == 0 {
		p.Y.Max = 1
	}
	return p, nil
}

func writeCanvas(path string, c vg.CanvasWriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func deviceName(d string) string {
	if d == "" {
		return "device from the config"
	}
	return d
}
