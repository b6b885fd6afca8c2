//go:build stokecuda

package cudaops

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	gtensor "gorgonia.org/tensor"

	"stoke/model"
)

// Engine is g in the three roles a model is built on (model.NewOn).
func (g *GraphEngine) Engine() model.Engine {
	return model.Engine{Values: g, Layers: g, Updater: g, Precision: g.e.prec}
}

// ValueOf is a device value of shape holding a copy of data.
func (g *GraphEngine) ValueOf(data []float32, shape gtensor.Shape) (*gtensor.Dense, error) {
	if len(data) != shape.TotalSize() {
		return nil, fmt.Errorf("cudaops: a value of shape %v from %d floats", shape, len(data))
	}
	v, err := g.NewValue(shape)
	if err != nil {
		return nil, err
	}
	if err := g.Upload(v, data); err != nil {
		return nil, err
	}
	return v, nil
}

// Read downloads src into buf (a new one when nil): device values always
// need the copy.
func (g *GraphEngine) Read(buf []float32, src G.Value) ([]float32, error) {
	if buf == nil {
		buf = make([]float32, size(src))
	}
	if err := g.Download(buf, src); err != nil {
		return nil, err
	}
	return buf, nil
}
