package config

import (
	"fmt"
	"strings"
)

// resumeChangeable lists the settings a resumed run may change, each with
// why it leaves the numbers alone: where and how fast the run goes, and for
// how long. Every other setting shapes the numbers and must equal the
// checkpoint's for the run to continue exactly. docs/config.md shows this
// list (kept current by a test), and the trainer and the train command both
// use it.
var resumeChangeable = []struct{ Path, Why string }{
	{"data.root", "the dataset may move; its file list (count and digest) must still match"},
	{"data.workers", "batches are identical whatever the worker count"},
	{"data.prefetch", "only how far the loader runs ahead"},
	{"data.pin_memory", "only where batch buffers live"},
	{"data.cache_dir", "only where a generated dataset is kept"},
	{"data.format", "only how the layout is told; the file list (count and digest) must still match"},
	{"data.bad_images", "only what an undecodable image does (stop, or be left out and listed)"},
	{"data.max_pixels", "a limit on decoding, not on what is decoded"},
	{"train.epochs", "the run goes on longer (or shorter); the learning-rate schedule is stretched to the new length, and the run says so"},
	{"train.device", "the same numbers on another device, up to the device's float summation order"},
	{"train.non_blocking", "only when copies happen"},
	{"train.out", "a new, empty run folder continues the run there (a folder holding another run is refused)"},
	{"train.resume", "where to continue from"},
	{"train.threads", "only how many OS threads run Go code"},
	{"train.progress", "only how progress is shown"},
	{"train.keep_checkpoints", "only how many checkpoints are kept"},
	{"train.trace", "only whether a timeline is written"},
	{"train.on_divergence", "only what a diverging loss does (stop or train on)"},
	{"train.dist", "only which engine sums the gradients; a resume on another number of ranks keeps the global batch (data.batch_size x ranks), which the trainer compares instead"},
	{"train.dist_timeout", "only how long a collective may wait"},
	{"train.dist_bucket_mb", "only how gradients are grouped for summing"},
	{"train.winograd", "only how the cpu's 3x3 convs are computed: the same sums, another float rounding"},
	{"cuda.gemm", "only which library computes the GPU's matrix products, at the same precision, up to its float summation order"},
	{"cuda.cublas", "only where cuBLAS is found"},
	{"cuda.graphs", "only whether the steps' launches are replayed from a captured graph: the same launches, the same weights"},
}

// ResumeChangeable reports whether a resumed run may change the setting at
// path (a dotted path, "train.epochs").
func ResumeChangeable(path string) bool {
	for _, s := range resumeChangeable {
		if s.Path == path {
			return true
		}
	}
	return false
}

// ResumeChangeableList is the settings a resumed run may change, in order.
func ResumeChangeableList() []string {
	out := make([]string, len(resumeChangeable))
	for i, s := range resumeChangeable {
		out[i] = s.Path
	}
	return out
}

// ResumeMismatches lists, in declaration order, every setting that differs
// between was (the run's config) and now among those a resumed run may not
// change, each as "path is X in the run but Y now" with now named by
// nowName ("now", "in c.yaml").
func ResumeMismatches(was, now Config, nowName string) []string {
	wf, nf := was.Fields(), now.Fields()
	var out []string
	for i := range wf {
		if ResumeChangeable(wf[i].Path) || wf[i].String() == nf[i].String() {
			continue
		}
		out = append(out, fmt.Sprintf("%s is %s in the run but %s %s", wf[i].Path, wf[i].String(), nf[i].String(), nowName))
	}
	return out
}

// ResumeReference renders the changeable settings as a Markdown list, the
// one docs/config.md shows.
func ResumeReference() string {
	var b strings.Builder
	for _, s := range resumeChangeable {
		fmt.Fprintf(&b, "- `%s`: %s\n", s.Path, s.Why)
	}
	return b.String()
}

// PerRankBatch is the data.batch_size each of ranks takes to continue a run
// whose global batch (data.batch_size × ranks as its checkpoints record it)
// is global, or an error saying why it cannot be split: every rank takes an
// equal share of each global batch (docs/distributed.md).
func PerRankBatch(global, ranks int) (int, error) {
	if ranks < 1 || global%ranks == 0 {
		return global / max(ranks, 1), nil
	}
	var fit []string
	for n := 1; n <= global && len(fit) < 12; n++ {
		if global%n == 0 {
			fit = append(fit, fmt.Sprint(n))
		}
	}
	return 0, fmt.Errorf("its global batch of %d images (data.batch_size × ranks, as its checkpoints record it) cannot be split over %d ranks: data.batch_size is per rank and every rank takes an equal share; resume it on a number of ranks that divides %d (%s)",
		global, ranks, global, strings.Join(fit, ", "))
}
