package trainer

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progress shows a run's progress: a live bar redrawn in place on a
// terminal, a few plain lines per epoch otherwise, and one summary line per
// epoch in every mode but "none".
type progress struct {
	w      io.Writer
	mode   string // bar, plain or none
	epoch  int
	epochs int
	total  int
	done   int
	last   time.Time
}

func newProgress(w io.Writer, mode string) *progress {
	if mode == "auto" {
		mode = "plain"
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			mode = "bar"
		}
	}
	return &progress{w: w, mode: mode}
}

func (p *progress) EpochStart(epoch, epochs, batches int) {
	p.epoch, p.epochs, p.total, p.done = epoch, epochs, batches, 0
	p.last = time.Time{}
}

func (p *progress) Step(loss, acc, imgPerSec, lr float64) {
	p.done++
	status := fmt.Sprintf("loss %.4f acc %5.1f%% %6.0f img/s lr %.4g", loss, 100*acc, imgPerSec, lr)
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
	if p.mode == "none" {
		return
	}
	if p.mode == "bar" {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "epoch %d/%d  train loss %.4f acc %.1f%%  val loss %.4f top1 %.1f%% top5 %.1f%%  %.0f img/s  wait %.0f%% copy %.0f%% compute %.0f%%  rss %d MiB  %.1fs\n",
		m.Epoch, m.Epochs, m.TrainLoss, 100*m.TrainAcc, m.ValLoss, 100*m.ValTop1, 100*m.ValTop5,
		m.ImgPerSec, 100*m.WaitShare, 100*m.CopyShare, 100*m.ComputeShare, m.RSSBytes>>20, m.EpochSeconds)
	if n := len(m.SkippedImages); n > 0 {
		fmt.Fprintf(p.w, "  skipped %d undecodable image(s) this epoch (bad_images: skip):\n", n)
		for _, path := range m.SkippedImages {
			fmt.Fprintf(p.w, "    %s\n", path)
		}
	}
}
