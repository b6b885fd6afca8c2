package bench

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// chart draws seconds per epoch for each result, split into waiting for
// data, copying and computing (stacked bars), as chart.png and chart.svg.
func (rep *Report) chart(dir string) error {
	n := len(rep.Results)
	if n == 0 {
		return nil
	}
	wait, cp, compute, other := make(plotter.Values, n), make(plotter.Values, n), make(plotter.Values, n), make(plotter.Values, n)
	names := make([]string, n)
	for i, r := range rep.Results {
		wait[i] = r.WaitShare * r.SecPerEpoch
		cp[i] = r.CopyShare * r.SecPerEpoch
		compute[i] = r.ComputeShare * r.SecPerEpoch
		other[i] = max(0, r.SecPerEpoch-wait[i]-cp[i]-compute[i])
		names[i] = r.Impl + "\n" + r.Name
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Seconds per epoch (%s, median of %d rounds)", deviceName(rep.Device), rep.Rounds)
	p.Y.Label.Text = "seconds per epoch"
	p.Legend.Top = true
	w := vg.Points(28)
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
			return err
		}
		bars.Color = part.c
		bars.LineStyle.Width = 0
		if below != nil {
			bars.StackOn(below)
		}
		below = bars
		p.Add(bars)
		p.Legend.Add(part.name, bars)
	}
	p.NominalX(names...)
	// Head room for the legend above the tallest bar.
	tallest := 0.0
	for _, r := range rep.Results {
		tallest = max(tallest, r.SecPerEpoch)
	}
	p.Y.Min, p.Y.Max = 0, 1.4*tallest
	for _, ext := range []string{"png", "svg"} {
		if err := p.Save(vg.Length(110*max(n, 4))*vg.Points(1), 320, filepath.Join(dir, "chart."+ext)); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
	}
	return nil
}

func deviceName(d string) string {
	if d == "" {
		return "device from the config"
	}
	return d
}
