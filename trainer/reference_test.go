package trainer

import (
	"path/filepath"
	"sync"
	"testing"
)

// The uninterrupted resnet20 run of resnetTiny (2 epochs of 4 steps, float32
// batches: batch_dtype auto on the cpu) is the reference of more than one
// test: TestResNetInterruptAtAnyStepResumesExactly compares resumed runs'
// checkpoint bytes and metrics with it, TestResNetUint8MatchesFloat32 the
// batches of a uint8 run with its batches. It is run once, by whichever of
// them runs first, and only read afterwards: the tests do not depend on
// their order, and each resnet20 run under -race on a loaded 2-core machine
// costs tens of seconds.

// refRun is what the tests read of the reference run.
type refRun struct {
	log            *batchLog
	weights, optim []byte
	metrics        []EpochMetrics
}

var resnet20Ref struct {
	once sync.Once
	run  *refRun
}

// resnet20Reference is the reference run, run on the first call. Its folder
// lies beside the tiny dataset (under the same temporary folder), since it
// outlives the test that ran it.
func resnet20Reference(t *testing.T) *refRun {
	t.Helper()
	resnet20Ref.once.Do(func() {
		c := resnetTiny(t)
		root, _ := tinyDataset() // resnetTiny has checked its error
		c.Train.Out = filepath.Join(filepath.Dir(root), "resnet20-reference")
		l, _ := logged(t, c) // a failure ends the calling test here, with run still nil
		w, o := checkpointBytes(t, c.Train.Out)
		resnet20Ref.run = &refRun{log: l, weights: w, optim: o, metrics: metricsLines(t, c.Train.Out)}
	})
	if resnet20Ref.run == nil {
		t.Fatal("the shared resnet20 reference run failed (see the first test that ran it)")
	}
	return resnet20Ref.run
}
