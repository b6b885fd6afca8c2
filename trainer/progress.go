package trainer

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"stoke/dist"
)

// progress shows a run's progress: a live bar redrawn in place on a
// terminal, a few plain lines per epoch otherwise, nothing within an epoch
// with "none", and one summary line per epoch in every mode.
type progress struct {
	w      io.Writer
	mode   string // bar, plain or none
	epoch  int
	epochs int
	total  int
	done   int
	last   time.Time
	start  time.Time     // of this epoch's first step
	epochT time.Duration // the last whole epoch's length, for the run's ETA
}

func newProgress(w io.Writer, mode string) *progress {
	if mode == "auto" {
		mode = "plain"
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) && !launchedRanks(os.Getenv) {
			mode = "bar"
		}
	}
	return &progress{w: w, mode: mode}
}

// launchedRanks reports whether a launcher started this process as one of
// several ranks. Open MPI's mpirun gives every rank a pty, also when
// mpirun's own output goes to a file or a pipe, so a rank cannot tell a
// terminal from a log: under a launcher "auto" means plain lines, which
// read well in both (--train.progress bar still draws the bar).
func launchedRanks(getenv func(string) string) bool {
	l, err := dist.Detect(getenv)
	return err == nil && l.Size > 1
}

// Note prints a line of its own between progress updates (clearing the
// live bar first); with an empty msg it only ends the bar's line, so that
// what is printed next starts on a fresh one.
func (p *progress) Note(msg string) {
	if p.mode == "bar" {
		fmt.Fprint(p.w, "\r\033[K")
	}
	if msg != "" {
		fmt.Fprintln(p.w, msg)
	}
}

func (p *progress) EpochStart(epoch, epochs, batches int) {
	p.epoch, p.epochs, p.total, p.done = epoch, epochs, batches, 0
	p.last = time.Time{}
	p.start = time.Now()
}

// eta is the time left in the run: this epoch's remaining steps at its pace
// so far, then each remaining epoch as long as the last whole one (or this
// one, projected, before any has finished). Evaluation time is in the
// last epoch's length, not in this epoch's projection.
func (p *progress) eta() time.Duration {
	if p.done == 0 || p.total == 0 {
		return 0
	}
	elapsed := time.Since(p.start)
	perStep := elapsed / time.Duration(p.done)
	left := perStep * time.Duration(max(p.total-p.done, 0))
	epoch := p.epochT
	if epoch == 0 {
		epoch = perStep * time.Duration(p.total)
	}
	return left + epoch*time.Duration(max(p.epochs-p.epoch-1, 0))
}

// fmtETA prints a duration as h:mm:ss, or m:ss under an hour.
func fmtETA(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// due reports whether the bar would show something new after pending more
// steps: the trainer reads a device's deferred step figures then (and at
// the epoch's end), not at every step. Never with "none".
func (p *progress) due(pending int) bool {
	switch p.mode {
	case "bar":
		return time.Since(p.last) >= 100*time.Millisecond || p.done+pending >= p.total
	case "plain":
		every := max(p.total/4, 1)
		return (p.done+pending)/every > p.done/every
	}
	return false
}

func (p *progress) Step(loss, acc, imgPerSec, lr float64) {
	p.done++
	status := fmt.Sprintf("loss %.4f acc %5.1f%% %6.0f img/s lr %.4g eta %s", loss, 100*acc, imgPerSec, lr, fmtETA(p.eta()))
	switch p.mode {
	case "bar":
		if time.Since(p.last) < 100*time.Millisecond && p.done < p.total {
			return
		}
		p.last = time.Now()
		const width = 30
		fill := width * p.done / max(p.total, 1)
		fmt.Fprintf(p.w, "\r\033[Kepoch %d/%d [%s%s] %d/%d %s", p.epoch+1, p.epochs,
			strings.Repeat("=", fill), strings.Repeat(" ", width-fill), p.done, p.total, status)
	case "plain":
		// About four lines an epoch, so a log shows progress without flooding.
		every := max(p.total/4, 1)
		if p.done%every == 0 && p.done < p.total {
			fmt.Fprintf(p.w, "epoch %d/%d step %d/%d %s\n", p.epoch+1, p.epochs, p.done, p.total, status)
		}
	}
}

func (p *progress) EpochDone(m EpochMetrics) {
	if !p.start.IsZero() {
		p.epochT = time.Since(p.start)
	}
	if p.mode == "bar" {
		fmt.Fprint(p.w, "\r\033[K")
	}
	sizes := ""
	if m.showSizes {
		sizes = fmt.Sprintf("  %d px (eval %d px)", m.ImageSize, m.EvalSize)
	}
	fmt.Fprintf(p.w, "epoch %d/%d%s  train loss %.4f acc %.1f%%  val loss %.4f top1 %.1f%% top5 %.1f%%  %.0f img/s  wait %.0f%% copy %.0f%% compute %.0f%%  rss %d MiB  %.1fs\n",
		m.Epoch, m.Epochs, sizes, m.TrainLoss, 100*m.TrainAcc, m.ValLoss, 100*m.ValTop1, 100*m.ValTop5,
		m.ImgPerSec, 100*m.WaitShare, 100*m.CopyShare, 100*m.ComputeShare, m.RSSBytes>>20, m.EpochSeconds)
	if n := len(m.SkippedImages); n > 0 {
		fmt.Fprintf(p.w, "  skipped %d undecodable image(s) this epoch (bad_images: skip):\n", n)
		for _, path := range m.SkippedImages {
			fmt.Fprintf(p.w, "    %s\n", path)
		}
	}
}
