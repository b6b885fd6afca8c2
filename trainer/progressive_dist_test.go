package trainer

import (
	"bytes"
	"context"
	"testing"
)

// TestProgressiveDataParallelMatchesOneProcess: a progressive run on 2
// ranks x batch 4 ends with the weights and figures of 1 rank x batch 8:
// the models rebuilt at each new side hand their gradients to the ranks'
// sum too.
func TestProgressiveDataParallelMatchesOneProcess(t *testing.T) {
	one := progressiveTiny(t)
	one.Data.BatchSize = 8
	if _, err := Run(context.Background(), one, Options{Out: new(bytes.Buffer)}); err != nil {
		t.Fatal(err)
	}
	par := progressiveTiny(t)
	par.Data.BatchSize = 4
	runRanks(t, 2, par, nil)
	sameAsOneRank(t, 2, par, one)
	for i, m := range metricsLines(t, par.Train.Out) {
		if m.ImageSize != progressiveSides[i] {
			t.Errorf("epoch %d: side %d, want %d", i+1, m.ImageSize, progressiveSides[i])
		}
	}
}
