package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"stoke/augment"
	"stoke/config"
	"stoke/data"
	"stoke/trainer"
)

// benchData is `train bench-data`: the loader alone, no model. It prints
// img/s for each worker count and the cost of each stage of one sample in
// µs/image, measured one stage at a time on one goroutine:
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
func benchData(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench-data", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "YAML config file or shipped config name (data.* and augment.* are used); without one, the built-in quickstart")
	dir := fs.String("data", "", "ImageFolder dataset (its train split is read); default data.root, or when that is empty the generated dataset train uses")
	size := fs.Int("image-size", 0, "output side in pixels; default data.image_size")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	workerList := fs.String("workers", "", "comma-separated worker counts; default 0,1,...,NumCPU")
	images := fs.Int("images", 2048, "images per measurement (after one warm-up batch)")
	dtype := fs.String("dtype", data.DTypeFloat32, "batch element type: float32 or uint8")
	decoder := fs.String("decoder", data.DecoderAuto, "JPEG decoder: auto, turbo or go")
	noScale := fs.Bool("no-dct-scale", false, "decode JPEGs at full size even where a reduced DCT scale would do")
	stages := fs.Bool("stages", true, "measure the per-stage costs")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: train bench-data --config FILE [--data DIR] [--image-size N] [--json]\n\nMeasures the data loader alone: img/s for each worker count, and µs/image per stage.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "train bench-data: "+format+"\n", a...)
		return code
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return fail(2, "%v", err)
	}
	if *dir != "" {
		cfg.Data.Root = *dir
	}
	if *size > 0 {
		cfg.Data.ImageSize = *size
	}
	if err := cfg.Validate(); err != nil {
		return fail(2, "%v", err)
	}
	if cfg.Data.Root == "" { // the generated dataset, as train uses it (made on first use)
		note := stdout
		if *asJSON {
			note = stderr // stdout holds JSON lines only
		}
		ctx, stop := interruptContext(stderr)
		root, err := trainer.DatasetRootContext(ctx, cfg.Data, note)
		stop()
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return fail(130, "interrupted while generating the dataset; nothing kept")
			}
			return fail(1, "%v", err)
		}
		cfg.Data.Root = root
	}
	workers := []int{}
	if *workerList == "" {
		for w := range runtime.NumCPU() + 1 {
			workers = append(workers, w)
		}
	} else {
		for _, f := range strings.Split(*workerList, ",") {
			w, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || w < 0 {
				return fail(2, "--workers: %q is not a worker count", f)
			}
			workers = append(workers, w)
		}
	}
	idx, _, err := data.Scan(cfg.Data.Root)
	if err != nil {
		return fail(1, "%v", err)
	}
	trainTf, plainTf, err := benchTransforms(cfg)
	if err != nil {
		return fail(2, "%v", err)
	}
	lc := data.LoaderConfig{
		Index: idx, Transform: trainTf, BatchSize: cfg.Data.BatchSize, Prefetch: max(cfg.Data.Prefetch, 1),
		Shuffle: true, Seed: cfg.Train.Seed, MaxPixels: cfg.Data.MaxPixels, Decoder: *decoder, DType: *dtype,
		NoDCTScale: *noScale,
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "bench-data: %d images in %s, %d px output, batch %d, %s batches, decoder %s, GOMAXPROCS %d\n",
			len(idx.Samples), idx.Root, cfg.Data.ImageSize, lc.BatchSize, *dtype, data.DecoderName(*decoder), runtime.GOMAXPROCS(0))
	}

	var st stageCosts
	clk := newStageClock()
	if *stages {
		if st, err = measureStages(lc, plainTf, min(*images, len(idx.Samples)), clk); err != nil {
			return fail(1, "%v", err)
		}
	}
	for i, w := range workers {
		lc.Workers = w
		rate, perImage, err := loaderRate(lc, *images, clk)
		if err != nil {
			return fail(1, "%v", err)
		}
		if w == 0 && *stages {
			st.Loader = perImage
			st.Collate = max(0, perImage-st.Read-st.Decode-st.CropResize-st.Jitter)
		}
		if *asJSON {
			line, _ := json.Marshal(benchLine{Workers: w, ImageSize: cfg.Data.ImageSize, ImgPerS: rate, DType: *dtype,
				Decoder: data.DecoderName(*decoder), Stages: st})
			fmt.Fprintln(stdout, string(line))
			continue
		}
		if i == 0 && *stages {
			fmt.Fprintf(stdout, "per image, one goroutine (%s): read %.0f µs, decode %.0f µs, crop+resize %.0f µs, jitter %.0f µs, collate %.0f µs; loader at 0 workers %.0f µs\n",
				st.Clock, st.Read, st.Decode, st.CropResize, st.Jitter, st.Collate, st.Loader)
		}
		fmt.Fprintf(stdout, "workers %d: %7.0f img/s\n", w, rate)
	}
	return 0
}

// stageCosts are µs per image, on Clock ("thread CPU time" or "wall
// clock").
type stageCosts struct {
	Clock      string  `json:"stage_clock"`
	Read       float64 `json:"read_us"`
	Decode     float64 `json:"decode_us"`
	CropResize float64 `json:"crop_resize_us"`
	Jitter     float64 `json:"jitter_us"`
	Collate    float64 `json:"collate_us"`
	Loader     float64 `json:"loader_us"` // the whole 0-worker loader, per image
}

type benchLine struct {
	Workers   int     `json:"workers"`
	ImageSize int     `json:"image_size"`
	ImgPerS   float64 `json:"img_per_s"`
	DType     string  `json:"dtype"`
	Decoder   string  `json:"decoder"`
	Stages    stageCosts
}

// MarshalJSON flattens the stages into the line.
func (b benchLine) MarshalJSON() ([]byte, error) {
	type plain struct {
		Workers   int     `json:"workers"`
		ImageSize int     `json:"image_size"`
		ImgPerS   float64 `json:"img_per_s"`
		DType     string  `json:"dtype"`
		Decoder   string  `json:"decoder"`
		stageCosts
	}
	return json.Marshal(plain{b.Workers, b.ImageSize, b.ImgPerS, b.DType, b.Decoder, b.Stages})
}

// benchTransforms builds the training transform from the config, and the
// same without colour jitter (to tell the jitter's cost apart).
func benchTransforms(cfg config.Config) (full, plain data.RegionTransform, err error) {
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

// measureStages times each stage over the first n samples of the epoch-0
// order, one stage at a time, as the loader would run them. To keep the
// stages' costs honest at every output size, each output goes to a slot of
// a batch-sized buffer in turn, as in the loader (at 224 px a batch is
// 38 MB: rewriting one small buffer that stays in cache would hide the
// cost of the writes), and the transforms with and without jitter take
// turns at running first on each decoded image, so that neither is always
// the one that finds it in cache. The goroutine keeps to one thread, so
// that clk can be its CPU time.
func measureStages(lc data.LoaderConfig, plain data.RegionTransform, n int, clk stageClock) (stageCosts, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	full := lc.Transform.(data.RegionTransform)
	dec := data.Decoder{MaxPixels: lc.MaxPixels, Kind: lc.Decoder}
	src := data.NewSampleSource()
	perm := data.Permutation(len(lc.Index.Samples), lc.Seed, 0, lc.Shuffle)[:n]
	s := full.Size()
	sample := 3 * s * s
	slots := max(lc.BatchSize, 2)
	var f32 []float32
	var u8 []uint8
	if lc.DType == data.DTypeUint8 {
		u8 = make([]uint8, slots*sample)
	} else {
		f32 = make([]float32, slots*sample)
	}
	slot := 0
	out := func() ([]float32, []uint8) {
		k := slot % slots
		slot++
		if u8 != nil {
			return nil, u8[k*sample : (k+1)*sample]
		}
		return f32[k*sample : (k+1)*sample], nil
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
	st := stageCosts{Clock: clk.String()}

	// read (the copies, which the loader does not make, are not timed)
	files := make([][]byte, n)
	var dRead time.Duration
	for i, k := range perm {
		t := clk.now()
		b, err := dec.ReadFile(lc.Index.Samples[k].Path)
		if err != nil {
			return st, err
		}
		dRead += clk.now() - t
		files[i] = append([]byte(nil), b...)
	}
	st.Read = us(dRead)

	// decode: the same crops the loader draws, so the same DCT scales
	var dDecode, dPlain, dFull time.Duration
	for i, k := range perm {
		path := lc.Index.Samples[k].Path
		t := clk.now()
		h, err := dec.DecodeHeader(path, files[i])
		if err != nil {
			return st, err
		}
		rng := src.For(lc.Seed, 0, k)
		r, ow, oh := full.Region(h.Width, h.Height, rng)
		scale := 1
		if h.Scalable && !lc.NoDCTScale {
			scale = data.DCTScale(r, ow, oh)
		}
		img, scale, err := dec.DecodeScaled(path, files[i], h, scale)
		if err != nil {
			return st, err
		}
		dDecode += clk.now() - t
		// crop+resize without jitter, and the full transform, on the same
		// decoded image and crop (the rng replays the crop's draws).
		apply := func(tf data.RegionTransform, d *time.Duration) error {
			rng := src.For(lc.Seed, 0, k)
			tf.Region(h.Width, h.Height, rng)
			a, b := out()
			t := clk.now()
			err := tf.ApplyRegion(img, scale, r, rng, a, b)
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
