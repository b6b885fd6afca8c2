package trainer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"stoke/internal/rss"
)

// EpochMetrics is one line of metrics.jsonl.
type EpochMetrics struct {
	Epoch        int     `json:"epoch"` // 1-based, as printed
	Epochs       int     `json:"epochs"`
	ImageSize    int     `json:"image_size"` // the side of this epoch's training images (data.progressive)
	EvalSize     int     `json:"eval_size"`  // the side of its evaluation images (data.eval_size)
	TrainLoss    float64 `json:"train_loss"`
	TrainAcc     float64 `json:"train_acc"`
	ValLoss      float64 `json:"val_loss"`
	ValTop1      float64 `json:"val_top1"`
	ValTop5      float64 `json:"val_top5"`
	ImgPerSec    float64 `json:"img_per_s"`     // training images per second of training wall time
	WaitShare    float64 `json:"wait_share"`    // of training wall time, blocked waiting for the next batch
	CopyShare    float64 `json:"copy_share"`    // of training wall time, copying batches to the device
	ComputeShare float64 `json:"compute_share"` // of training wall time, in the model's step
	TrainSeconds float64 `json:"train_seconds"`
	EvalSeconds  float64 `json:"eval_seconds"`
	EpochSeconds float64 `json:"epoch_seconds"`
	LR           float64 `json:"lr"` // at the epoch's last step
	RSSBytes     int64   `json:"rss_bytes"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	Checkpoint   string  `json:"checkpoint,omitempty"`
	// SkippedImages lists the images left out as undecodable this epoch
	// (data.bad_images: skip).
	SkippedImages []string `json:"skipped_images,omitempty"`
	// GPU is what a training step cost the host on the cuda device, counted
	// at the driver calls (the backend's DriverCounters, cudaops/
	// backend_counters.go) over this epoch's steps in this invocation,
	// evaluation and checkpoints excluded; absent on the CPU, whose backend
	// counts nothing.
	GPU *GPUCounters `json:"gpu,omitempty"`
	// Workers is the training loader's worker count at the epoch's end;
	// under data.workers: auto, AutoWorkers holds the lines auto printed
	// during the epoch (what it measured, picked, and kept).
	Workers     int    `json:"workers"`
	AutoWorkers string `json:"auto_workers,omitempty"`

	showSizes bool // the epoch line names the sides: they vary in this run
}

// GPUCounters are driver calls per training step (docs/cuda.md, "What a
// step costs the host"): the difference of two readings, at the start of
// the epoch's first step and after its last one, over the steps between.
// Graph says whether the steps ran as a CUDA Graph, as the backend reported
// it at the end of the epoch (a graph is captured in the first step it
// runs); no backend captures one yet, so it is false.
type GPUCounters struct {
	LaunchesPerStep  float64 `json:"launches_per_step"`
	HostSyncsPerStep float64 `json:"host_syncs_per_step"`
	AllocsPerStep    float64 `json:"allocs_per_step"`
	H2DBytesPerStep  float64 `json:"h2d_bytes_per_step"`
	D2HBytesPerStep  float64 `json:"d2h_bytes_per_step"`
	Graph            bool    `json:"graph"`
}

// DriverCounts are a backend's reading of the driver's running totals of
// launches, host waits, allocations and bytes copied to and from the device,
// and whether its steps run as a CUDA Graph (Device.Counters).
type DriverCounts struct {
	Launches, HostSyncs, Allocs, H2DBytes, D2HBytes uint64
	Graph                                           bool
}

// perStep is the counts from reading a to reading b over steps steps; nil
// for no steps, or when either reading failed (ok false: a closed backend).
func perStep(a, b DriverCounts, okA, okB bool, steps int) *GPUCounters {
	if steps <= 0 || !okA || !okB {
		return nil
	}
	n := float64(steps)
	return &GPUCounters{
		LaunchesPerStep:  float64(b.Launches-a.Launches) / n,
		HostSyncsPerStep: float64(b.HostSyncs-a.HostSyncs) / n,
		AllocsPerStep:    float64(b.Allocs-a.Allocs) / n,
		H2DBytesPerStep:  float64(b.H2DBytes-a.H2DBytes) / n,
		D2HBytesPerStep:  float64(b.D2HBytes-a.D2HBytes) / n,
		Graph:            b.Graph,
	}
}

func epochMetrics(epoch, epochs int, tr trainResult, ev evalResult, wall time.Duration, lr float64) EpochMetrics {
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	cur, peak := rss.Now()
	return EpochMetrics{
		Epoch: epoch + 1, Epochs: epochs,
		TrainLoss:     div(tr.LossSum, float64(tr.Images)),
		TrainAcc:      div(float64(tr.Correct), float64(tr.Images)),
		ValLoss:       div(ev.LossSum, float64(ev.Images)),
		ValTop1:       div(float64(ev.Top1), float64(ev.Images)),
		ValTop5:       div(float64(ev.Top5), float64(ev.Images)),
		ImgPerSec:     div(float64(tr.ImagesNow), tr.Wall.Seconds()), // this invocation's images: a resumed epoch's others took no time here
		WaitShare:     div(tr.Wait.Seconds(), tr.Wall.Seconds()),
		CopyShare:     div(tr.Copy.Seconds(), tr.Wall.Seconds()),
		ComputeShare:  div(tr.Compute.Seconds(), tr.Wall.Seconds()),
		TrainSeconds:  tr.Wall.Seconds(),
		EvalSeconds:   ev.Wall.Seconds(),
		EpochSeconds:  wall.Seconds(),
		LR:            lr,
		RSSBytes:      cur,
		PeakRSSBytes:  peak,
		SkippedImages: tr.Skipped,
		GPU:           tr.gpu,
	}
}

// metricsFile appends to RUN/metrics.jsonl.
type metricsFile struct{ f *os.File }

// openMetrics opens RUN/metrics.jsonl for appending after epoch `after`:
// records of later epochs (left by a run that stopped after its last
// checkpoint) are dropped, so a resumed run's file has each epoch once.
func openMetrics(run string, after int) (*metricsFile, error) {
	path := filepath.Join(run, "metrics.jsonl")
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var keep bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(old))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		var m struct {
			Epoch int `json:"epoch"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Epoch >= 1 && m.Epoch <= after {
			keep.Write(sc.Bytes())
			keep.WriteByte('\n')
		}
	}
	if err := writeFileAtomic(path, keep.Bytes()); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &metricsFile{f}, nil
}

func (m *metricsFile) Write(rec EpochMetrics) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := m.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

func (m *metricsFile) Close() error { return m.f.Close() }
