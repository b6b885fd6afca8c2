//go:build stokecuda

package cudaops

import (
	"errors"

	"stoke/model"
)

// runStep is one training step through the trainer's seam: Start, then Wait.
func runStep(b *Backend, in model.Input, lr float32) (model.StepResult, model.StepTimes, error) {
	p, err := b.Start(in, lr)
	if err != nil {
		return model.StepResult{}, model.StepTimes{}, err
	}
	return settle(b, p)
}

// settle is p's result, its times and its error, waiting for the device
// when the step's figures are deferred (Backend.Results): a step taken
// synchronously, as the tests that line the GPU up with the CPU take it.
func settle(b *Backend, p model.Pending) (model.StepResult, model.StepTimes, error) {
	r, t, err := p.Wait()
	if err != nil || !r.Deferred {
		return r, t, err
	}
	out, err := b.Results()
	if err != nil {
		return model.StepResult{}, model.StepTimes{}, err
	}
	if len(out) == 0 {
		return model.StepResult{}, model.StepTimes{}, errors.New("cudaops test: a deferred step with no outcome")
	}
	o := out[len(out)-1]
	return o.Result, o.Times, o.Err
}

// ev is the step's events.
func (pd *Pending) ev() *stepEvents { return &pd.b.ev[pd.k%stepRing] }

// startStep is Start with the step's own type, whose events the copy-order
// tests read.
func startStep(b *Backend, in model.Input, lr float32) (*Pending, error) {
	p, err := b.Start(in, lr)
	if err != nil {
		return nil, err
	}
	return p.(*Pending), nil
}
