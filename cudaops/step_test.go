//go:build stokecuda

package cudaops

import "stoke/model"

// runStep is one training step through the trainer's seam: Start, then Wait.
func runStep(b *Backend, in model.Input, lr float32) (model.StepResult, model.StepTimes, error) {
	p, err := b.Start(in, lr)
	if err != nil {
		return model.StepResult{}, model.StepTimes{}, err
	}
	return p.Wait()
}

// startStep is Start with the step's own type, whose events the copy-order
// tests read.
func startStep(b *Backend, in model.Input, lr float32) (*Pending, error) {
	p, err := b.Start(in, lr)
	if err != nil {
		return nil, err
	}
	return p.(*Pending), nil
}
