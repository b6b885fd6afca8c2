package trainer

import (
	"fmt"
	"math"
	"slices"

	"stoke/model"
)

// Divergence: a learning rate too high for the model shows as a training
// loss that leaps far above where it had got to, or that falls back to
// chance (ln K for K classes: the network predicts the uniform distribution)
// and stays there; without BatchNorm the cnn does not come back from
// either. A NaN or infinite loss is not this: the step reports it and the
// run stops (trainer.go). The detector watches a smoothed loss, so that one
// bad batch is not a divergence, and says so at the step it sees it; what
// follows is train.on_divergence's: auto stops after writing a checkpoint
// of the last state that was still good, stop stops at once, warn trains on.

// The policies of train.on_divergence.
const (
	divergenceAuto = "auto"
	divergenceStop = "stop"
	divergenceWarn = "warn"
)

const (
	// divergenceSmoothing is the weight of a step's loss in the smoothed
	// loss: an exponential average over about 10 steps.
	divergenceSmoothing = 0.1
	// divergenceChanceSteps is how long the smoothed loss must stay at
	// chance, after having been well below, to count as stuck there.
	divergenceChanceSteps = 20
	// divergenceWindow: the spike test reads the median of the last this
	// many step losses, not the smoothed loss, which one or two wild
	// batches move far (a BatchNorm network at batch 8 on a small set had
	// steps at 10x its usual loss a few steps apart, and trained on).
	divergenceWindow = 5
)

// The kinds of divergence.
const (
	divergedSpike  = "spike"  // far above its minimum
	divergedChance = "chance" // back at ln K and staying
)

// divergence watches a run's training loss, step by step.
type divergence struct {
	lnK     float64                   // the loss of a uniform prediction over the classes
	steps   int                       // losses seen
	ema     float64                   // the smoothed loss
	min     float64                   // its lowest value so far
	minStep int                       // the step it was reached at
	atLnK   int                       // consecutive steps the smoothed loss has been at chance
	recent  [divergenceWindow]float64 // the last step losses, a ring
	fired   bool                      // said once: a run is told once
}

func newDivergence(classes int) *divergence {
	return &divergence{lnK: math.Log(float64(classes)), min: math.Inf(1)}
}

// DivergedError reports a diverged training loss: where, how, and what to
// do about it. Checkpoint is the checkpoint of the last good state when
// one was written for it (train.on_divergence auto), else the newest one
// the run has, or "" for none.
type DivergedError struct {
	Kind       string // divergedSpike or divergedChance
	Epoch      int    // 1-based
	Step       int    // the optimizer step, from 0 over the run (as the NaN message and the timeline count)
	Loss       float64
	Smoothed   float64 // the smoothed loss at Step (spike: the median of the last divergenceWindow)
	Min        float64 // the smoothed loss's minimum
	MinStep    int
	LnK        float64
	LR         float64 // the learning rate at Step
	OptimLR    float64 // the peak learning rate, optim.lr
	Checkpoint string
	Written    bool   // Checkpoint was written for this divergence
	Policy     string // train.on_divergence
}

// Diagnosis is the first sentence: what the loss did, where, and the advice.
func (e *DivergedError) Diagnosis() string {
	what := fmt.Sprintf("the training loss (%.3g over the last %d steps, the median; this step %.3g) is far above the smoothed loss's minimum %.3g of step %d", e.Smoothed, divergenceWindow, e.Loss, e.Min, e.MinStep)
	if e.Kind == divergedChance {
		what = fmt.Sprintf("the training loss has been at chance (ln %d = %.3g, smoothed %.3g) for %d steps after having reached %.3g at step %d: the network has stopped learning",
			int(math.Round(math.Exp(e.LnK))), e.LnK, e.Smoothed, divergenceChanceSteps, e.Min, e.MinStep)
	}
	return fmt.Sprintf("training diverged at epoch %d step %d: %s; the learning rate there was %.4g (optim.lr %.4g), too high for this model and data: lower optim.lr below it (half of it is a good first try: --optim.lr %.3g)",
		e.Epoch, e.Step, what, e.LR, e.OptimLR, e.LR/2)
}

func (e *DivergedError) Error() string {
	msg := e.Diagnosis() + "; training stopped (train.on_divergence " + e.Policy + ")"
	switch {
	case e.Written:
		msg += ", after writing the last good state, from before the divergence, to " + e.Checkpoint
	case e.Checkpoint != "":
		msg += "; the checkpoints written so far are kept, the newest is " + e.Checkpoint
	default:
		msg += "; no checkpoint was written"
	}
	return msg
}

// observe takes step's training loss and reports a divergence the first
// time it sees one (nil otherwise, and after it has reported once). Only
// finite losses are given to it.
func (d *divergence) observe(step int, loss float64) *DivergedError {
	if d.steps == 0 {
		d.ema = loss
	} else {
		d.ema += divergenceSmoothing * (loss - d.ema)
	}
	d.steps++
	if d.ema < d.min {
		d.min, d.minStep = d.ema, step
	}
	// At chance after having been well below it: below half of ln K.
	if d.min < d.lnK/2 && math.Abs(d.ema-d.lnK) < 0.1*d.lnK {
		d.atLnK++
	} else {
		d.atLnK = 0
	}
	d.recent[(d.steps-1)%divergenceWindow] = loss
	// Far above: the median of the last divergenceWindow steps above the
	// minimum by twice the minimum itself and by three quarters of ln K at
	// least, well beyond a healthy loss's noise at either end of a run: at
	// the start (a minimum near ln K) the loss has tripled, late in a run
	// (a minimum near 0) it is three quarters of the way back to chance.
	far := d.steps >= divergenceWindow && d.recentMedian() > d.min+max(2*d.min, 0.75*d.lnK)
	kind := ""
	switch {
	case far:
		kind = divergedSpike
	case d.atLnK >= divergenceChanceSteps:
		kind = divergedChance
	}
	if kind == "" || d.fired {
		return nil
	}
	d.fired = true
	level := d.ema
	if kind == divergedSpike {
		level = d.recentMedian()
	}
	return &DivergedError{Kind: kind, Step: step, Loss: loss, Smoothed: level, Min: d.min, MinStep: d.minStep, LnK: d.lnK}
}

// recentMedian is the median of the last divergenceWindow step losses.
func (d *divergence) recentMedian() float64 {
	w := d.recent
	slices.Sort(w[:])
	return w[divergenceWindow/2]
}

// good reports whether the state after the last step observed is one to
// keep: the smoothed loss is near its minimum (within a tenth of ln K).
func (d *divergence) good() bool {
	return !d.fired && d.steps > 0 && d.ema <= d.min+0.1*d.lnK
}

// divergenceWatch is a run's detector and, under auto, the last good state
// it keeps for the checkpoint it writes on a divergence.
type divergenceWatch struct {
	det    *divergence
	policy string
	every  int        // steps between snapshots of a good state
	good   *goodState // the newest one; nil before the first
}

// goodState is a snapshot of the model and optimizer taken between two
// steps while the loss was still good, with where in the run it was taken.
type goodState struct {
	epochsDone int // epochs completed; the snapshot is inside the next one
	step       int // optimizer steps taken
	partial    progressState
	params     []model.NamedTensor
	optim      []model.NamedTensor
}

// watchLoss gives st's loss to the run's divergence detector (rank 0's:
// it is the rank that writes, and every rank holds the same weights) and
// does what train.on_divergence says when it reports a divergence. Under
// auto it keeps, every few steps, a copy of the state while the loss is
// good, and on a divergence writes the newest copy as a checkpoint before
// stopping.
func (s *session) watchLoss(epoch int, r *trainResult, st *stepInFlight, loss float64) error {
	if !s.d.writer() {
		return nil
	}
	w := s.watch
	if w == nil {
		w = &divergenceWatch{det: newDivergence(len(s.trainSet.Classes)), policy: s.cfg.Train.OnDivergence,
			every: max(s.trainLoader.NumBatches()/8, 1)}
		s.watch = w
	}
	e := w.det.observe(st.step, loss)
	if e == nil {
		// A snapshot only between two steps (no later step started: a GPU
		// step may still be queued) and not at an epoch's end, which its
		// checkpoint covers.
		if w.policy == divergenceAuto && (st.step+1)%w.every == 0 && s.step == st.step+1 &&
			r.Batches < s.trainLoader.NumBatches() && w.det.good() {
			params, optim, err := s.net.State()
			if err != nil {
				return fmt.Errorf("epoch %d step %d: keeping the last good state: %w", epoch+1, st.step, err)
			}
			w.good = &goodState{epochsDone: epoch, step: s.step, partial: r.progressState, params: params, optim: optim}
		}
		return nil
	}
	e.Epoch, e.LR, e.OptimLR, e.Policy = epoch+1, st.lr, s.cfg.Optim.LR, w.policy
	if w.policy == divergenceWarn {
		s.bar.Note("warning: " + e.Diagnosis() + "; training goes on (train.on_divergence warn)")
		return nil
	}
	s.bar.Note("") // the error ends the live line
	if w.policy == divergenceAuto && w.good != nil && w.good.step > s.savedStep {
		dir, err := s.saveGood(w.good)
		if err != nil {
			return fmt.Errorf("%s; and the checkpoint of the last good state could not be written: %w", e.Diagnosis(), err)
		}
		e.Checkpoint, e.Written = dir, true
	} else if dir, ok := latestCheckpoint(s.dir); ok {
		e.Checkpoint = dir
	}
	return e
}

// saveGood writes g as a checkpoint of the part-way epoch it was taken in,
// the way an interrupt's checkpoint is written.
func (s *session) saveGood(g *goodState) (string, error) {
	dir, err := saveCheckpoint(s.dir, checkpointState{
		Epoch: g.epochsDone, Step: g.step, StepsPerEpoch: s.trainLoader.NumBatches(), Partial: g.partial, Config: s.d.checkpointConfig(s.cfg),
		Classes: s.trainSet.Classes, Decoder: s.decoder, Dataset: s.files,
		Params: g.params, Optim: g.optim,
	}, s.cfg.Train.KeepCkpts)
	if err == nil {
		s.checkpointed, s.savedStep = true, g.step
	}
	return dir, err
}
