package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"time"

	"stoke/augment"
	"stoke/config"
	"stoke/data"
)

// DataOptions say what Data measures: the loader of Config's data.* and
// augment.* (data.root must name the dataset: its train split is read).
type DataOptions struct {
	Config     config.Config
	Workers    []int  // worker counts, one measurement each; nil = 0, 1, ..., NumCPU
	Images     int    // images per measurement, after one warm-up batch
	DType      string // data.DTypeFloat32 or data.DTypeUint8
	Decoder    string // data.DecoderAuto, DecoderTurbo or DecoderGo
	NoDCTScale bool   // decode at full size even where a reduced DCT scale would do
	Stages     bool   // measure the per-stage costs too
	JSON       bool   // one DataLine per line as JSON, and nothing else
}

// Data is `train bench-data`: the loader alone, no model. It writes to out
// the img/s of each worker count and the cost of each stage of one sample
// in µs/image, measured one stage at a time on one goroutine by the
// loader's own stage functions (data/stages.go):
//
//	read         the file's bytes (page cache)
//	decode       header + pixels, at the DCT scale the crop allows
//	crop_resize  crop + antialiased resize + flip + normalize (or quantize),
//	             written into a batch-sized buffer, slot after slot
//	jitter       what colour jitter adds to that
//	collate      the rest of the loader's time per image at 0 workers
//	             (RNG seeding, labels, clearing, hand-over, and whatever
//	             the stages cost in the loader beyond their time here)
//
// The stages and the 0-worker loader they are subtracted from are timed on
// the thread's CPU time where there is one (Linux): on a machine shared with
// other work, wall time would charge the waits for a core to whichever stage
// was running. img/s is wall time, as a user sees it.
func Data(opt DataOptions, out io.Writer) error {
	cfg := opt.Config
	workers := opt.Workers
	if workers == nil {
		for w := range runtime.NumCPU() + 1 {
			workers = append(workers, w)
		}
	}
	idx, _, err := data.ScanWith(cfg.Data.Root, data.ScanOptions{Format: cfg.Data.Format})
	if err != nil {
		return err
	}
	trainTf, plainTf, err := DataTransforms(cfg)
	if err != nil {
		return err
	}
	lc := data.LoaderConfig{
		Index: idx, Transform: trainTf, BatchSize: cfg.Data.BatchSize, Prefetch: max(cfg.Data.Prefetch, 1),
		Shuffle: true, Seed: cfg.Train.Seed, MaxPixels: cfg.Data.MaxPixels, Decoder: opt.Decoder, DType: opt.DType,
		NoDCTScale: opt.NoDCTScale,
	}
	mach := ThisMachine()
	if !opt.JSON {
		fmt.Fprintf(out, "bench-data: %d images in %s, %d px output, batch %d, %s batches, decoder %s, GOMAXPROCS %d\nmachine: %s\n",
			len(idx.Samples), idx.Root, cfg.Data.ImageSize, lc.BatchSize, opt.DType, data.DecoderName(opt.Decoder), runtime.GOMAXPROCS(0), mach)
		if why := BusyBefore(); why != "" {
			fmt.Fprintf(out, "WARNING: the machine is busy (%s): the timings below are not this machine's speed\n", why)
		}
	}

	var st StageCosts
	clk := newStageClock()
	if opt.Stages {
		if st, err = measureStages(lc, plainTf, min(opt.Images, len(idx.Samples)), clk); err != nil {
			return err
		}
	}
	for i, w := range workers {
		lc.Workers = w
		meter := startLoad()
		rate, perImage, err := loaderRate(lc, opt.Images, clk)
		if err != nil {
			return err
		}
		load := meter.stop()
		threads := max(1, min(w, runtime.GOMAXPROCS(0))) // the cores this measurement can keep busy
		busy := load.Busy(threads)
		if w == 0 && opt.Stages {
			st.Loader = perImage
			st.Collate = max(0, perImage-st.Read-st.Decode-st.CropResize-st.Jitter)
		}
		if opt.JSON {
			line, _ := json.Marshal(DataLine{Workers: w, ImageSize: cfg.Data.ImageSize, ImgPerS: rate, DType: opt.DType,
				Decoder: data.DecoderName(opt.Decoder), Stages: st,
				Machine: DataMachine{CPU: mach.CPU, CPUFamily: mach.Family, CPUModel: mach.Model, Load1Before: load.Load1Before,
					WallSeconds: load.WallSeconds, CPUSeconds: load.CPUSeconds, OthersCores: load.OthersCores, Busy: busy}})
			fmt.Fprintln(out, string(line))
			continue
		}
		if i == 0 && opt.Stages {
			fmt.Fprintf(out, "per image, one goroutine (%s): read %.0f µs, decode %.0f µs, crop+resize %.0f µs, jitter %.0f µs, collate %.0f µs; loader at 0 workers %.0f µs\n",
				st.Clock, st.Read, st.Decode, st.CropResize, st.Jitter, st.Collate, st.Loader)
		}
		fmt.Fprintf(out, "workers %d: %7.0f img/s  (%s)\n", w, rate, load)
		if busy != "" {
			fmt.Fprintf(out, "  WARNING: the machine was busy (%s): this figure is not the loader's speed\n", busy)
		}
	}
	return nil
}

// StageCosts are µs per image, on Clock ("thread CPU time" or "wall
// clock").
type StageCosts struct {
	Clock      string  `json:"stage_clock"`
	Read       float64 `json:"read_us"`
	Decode     float64 `json:"decode_us"`
	CropResize float64 `json:"crop_resize_us"`
	Jitter     float64 `json:"jitter_us"`
	Collate    float64 `json:"collate_us"`
	Loader     float64 `json:"loader_us"` // the whole 0-worker loader, per image
}

// DataLine is one line of `train bench-data --json` (the stages flattened
// into it; scripts/bench_data_pytorch.py reads img_per_s).
type DataLine struct {
	Workers   int     `json:"workers"`
	ImageSize int     `json:"image_size"`
	ImgPerS   float64 `json:"img_per_s"`
	DType     string  `json:"dtype"`
	Decoder   string  `json:"decoder"`
	Stages    StageCosts
	Machine   DataMachine
}

// DataMachine is what a DataLine ran on and how busy the machine was
// (Machine, Load), flattened into the line after the stages.
type DataMachine struct {
	CPU         string  `json:"cpu"`
	CPUFamily   int     `json:"cpu_family"`
	CPUModel    int     `json:"cpu_model"`
	Load1Before float64 `json:"load1_before"`
	WallSeconds float64 `json:"wall_seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	OthersCores float64 `json:"others_cores"`
	Busy        string  `json:"busy"` // Load.Busy; "" = quiet
}

// MarshalJSON flattens the stages and the machine into the line.
func (b DataLine) MarshalJSON() ([]byte, error) {
	type plain struct {
		Workers   int     `json:"workers"`
		ImageSize int     `json:"image_size"`
		ImgPerS   float64 `json:"img_per_s"`
		DType     string  `json:"dtype"`
		Decoder   string  `json:"decoder"`
		StageCosts
		DataMachine
	}
	return json.Marshal(plain{b.Workers, b.ImageSize, b.ImgPerS, b.DType, b.Decoder, b.Stages, b.Machine})
}

// DataTransforms builds the training transform from the config, and the
// same without colour jitter (to tell the jitter's cost apart).
func DataTransforms(cfg config.Config) (full, plain data.RegionTransform, err error) {
	a := cfg.Augment
	p := augment.DefaultTrainParams(cfg.Data.ImageSize)
	p.Scale, p.Ratio = [2]float64{a.Scale[0], a.Scale[1]}, [2]float64{a.Ratio[0], a.Ratio[1]}
	p.HFlip, p.Brightness, p.Contrast, p.Saturation = a.HFlip, a.Brightness, a.Contrast, a.Saturation
	p.Mean = [3]float32{float32(a.Mean[0]), float32(a.Mean[1]), float32(a.Mean[2])}
	p.Std = [3]float32{float32(a.Std[0]), float32(a.Std[1]), float32(a.Std[2])}
	f, err := augment.NewTrain(p)
	if err != nil {
		return nil, nil, err
	}
	p.Brightness, p.Contrast, p.Saturation = 0, 0, 0
	q, err := augment.NewTrain(p)
	if err != nil {
		return nil, nil, err
	}
	return f, q, nil
}

// loaderRate runs the loader for at least n images after a warm-up batch
// and returns images per second and, at 0 workers (the loader runs on the
// calling goroutine, locked to its thread here), µs per image on clk.
func loaderRate(lc data.LoaderConfig, n int, clk stageClock) (rate, perImage float64, err error) {
	l, err := data.NewLoader(lc)
	if err != nil {
		return 0, 0, err
	}
	defer l.Close()
	if lc.Workers == 0 {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	ctx := context.Background()
	var start time.Time
	var c0 time.Duration
	seen := -1 // the warm-up batch does not count
	for epoch := 0; ; epoch++ {
		it := l.Epoch(ctx, epoch)
		for {
			b, err := it.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				it.Close()
				return 0, 0, err
			}
			if seen < 0 {
				seen, start, c0 = 0, time.Now(), clk.now()
			} else {
				seen += b.N
			}
			b.Release()
			if seen >= n {
				it.Close()
				perImage = float64((clk.now() - c0).Nanoseconds()) / 1e3 / float64(seen)
				return float64(seen) / time.Since(start).Seconds(), perImage, nil
			}
		}
		it.Close()
	}
}

// measureStages times each stage of the loader's work on the first n
// samples of the epoch-0 order, one stage at a time, with the loader's own
// stage functions (data/stages.go). lc.Transform must be a
// data.RegionTransform; plain is the same without colour jitter. To keep
// the stages' costs honest at every output size, each output goes to a slot
// of a batch-sized buffer in turn, as in the loader (at 224 px a batch is
// 38 MB: rewriting one small buffer that stays in cache would hide the cost
// of the writes), and the transforms with and without jitter take turns at
// running first on each decoded image, so that neither is always the one
// that finds it in cache. The goroutine keeps to one thread, so that clk
// can be its CPU time.
func measureStages(lc data.LoaderConfig, plain data.RegionTransform, n int, clk stageClock) (StageCosts, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	full := lc.Transform.(data.RegionTransform)
	dec := data.Decoder{MaxPixels: lc.MaxPixels, MaxBytes: lc.MaxDecodeBytes, Kind: lc.Decoder} // a loader worker's
	src := data.NewSampleSource()
	perm := data.Permutation(len(lc.Index.Samples), lc.Seed, 0, lc.Shuffle)[:n]
	out := newBatchSlots(lc, full.Size())
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
	st := StageCosts{Clock: clk.String()}

	files, dRead, err := readStage(&dec, lc, perm, clk)
	if err != nil {
		return st, err
	}
	st.Read = us(dRead)

	// decode: header, the crop the loader draws, the DCT scale it allows,
	// the pixels
	var dDecode, dPlain, dFull time.Duration
	for i, k := range perm {
		path := lc.Index.Samples[k].Path
		t := clk.now()
		h, err := dec.DecodeHeader(path, files[i])
		if err != nil {
			return st, err
		}
		c := data.PlanCrop(full, h, src.For(lc.Seed, 0, k), lc.NoDCTScale)
		img, scale, err := dec.DecodeScaled(path, files[i], h, c.Scale)
		if err != nil {
			return st, err
		}
		dDecode += clk.now() - t
		// crop+resize without jitter, and the full transform, on the same
		// decoded image and crop (a fresh rng replays the crop's draws).
		apply := func(tf data.RegionTransform, d *time.Duration) error {
			rng := src.For(lc.Seed, 0, k)
			data.PlanCrop(tf, h, rng, lc.NoDCTScale)
			a, b := out.next()
			t := clk.now()
			err := data.ApplyCrop(tf, img, scale, c, rng, path, a, b)
			*d += clk.now() - t
			return err
		}
		first, second, d1, d2 := plain, full, &dPlain, &dFull
		if i%2 == 1 {
			first, second, d1, d2 = full, plain, &dFull, &dPlain
		}
		if err := apply(first, d1); err != nil {
			return st, err
		}
		if err := apply(second, d2); err != nil {
			return st, err
		}
	}
	st.Decode = us(dDecode)
	st.CropResize = us(dPlain)
	st.Jitter = max(0, us(dFull)-us(dPlain))
	return st, nil
}

// batchSlots is a batch-sized output buffer of the loader's dtype, handed
// out one sample's slot at a time, round the batch.
type batchSlots struct {
	f32          []float32
	u8           []uint8
	sample, n, k int
}

// newBatchSlots makes max(lc.BatchSize, 2) slots of side s, in uint8 or
// float32 as lc.DType says.
func newBatchSlots(lc data.LoaderConfig, s int) *batchSlots {
	b := &batchSlots{sample: 3 * s * s, n: max(lc.BatchSize, 2)}
	if lc.DType == data.DTypeUint8 {
		b.u8 = make([]uint8, b.n*b.sample)
	} else {
		b.f32 = make([]float32, b.n*b.sample)
	}
	return b
}

// next is the next slot: a float32 or a uint8 one, the other nil.
func (b *batchSlots) next() ([]float32, []uint8) {
	k := b.k % b.n
	b.k++
	if b.u8 != nil {
		return nil, b.u8[k*b.sample : (k+1)*b.sample]
	}
	return b.f32[k*b.sample : (k+1)*b.sample], nil
}

// readStage reads the files of the samples perm names with dec, as a
// loader worker does, and returns copies of them and the time the reads
// took on clk (the copies, which the loader does not make, are not timed).
func readStage(dec *data.Decoder, lc data.LoaderConfig, perm []int, clk stageClock) ([][]byte, time.Duration, error) {
	files := make([][]byte, len(perm))
	var dRead time.Duration
	rd := data.NewSampleReader(lc.Index) // a file each, or a member of a shard, as the loader reads them
	defer rd.Close()
	for i, k := range perm {
		t := clk.now()
		b, err := rd.Read(dec, k)
		if err != nil {
			return nil, 0, err
		}
		dRead += clk.now() - t
		files[i] = append([]byte(nil), b...)
	}
	return files, dRead, nil
}

// stageClock times the stages: the thread's CPU time where the OS gives it
// (Linux), else the wall clock. Other processes on the machine then inflate
// neither the stages nor the collate remainder, measured on the same clock.
type stageClock struct {
	cpu   bool
	wall0 time.Time
}

func newStageClock() stageClock {
	_, ok := threadCPU()
	return stageClock{cpu: ok, wall0: time.Now()}
}

func (c stageClock) now() time.Duration {
	if c.cpu {
		d, _ := threadCPU()
		return d
	}
	return time.Since(c.wall0)
}

func (c stageClock) String() string {
	if c.cpu {
		return "thread CPU time"
	}
	return "wall clock"
}
