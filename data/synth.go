package data

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// SynthOptions describes a generated dataset. Train and Val are images per
// class; Size is the side of the square JPEGs in pixels; Quality is the
// JPEG quality (0 = 90).
type SynthOptions struct {
	Classes, Train, Val, Size int
	Seed                      uint64
	Quality                   int
}

// Every class is a distinct (shape, colour, texture); the three list
// lengths are pairwise coprime, so class c = (c mod 7, c mod 5, c mod 3)
// gives 105 distinct classes, and for up to 35 classes shape and colour
// alone already tell them apart. No colour and no shape belongs to one
// class only (once there are more than 7 classes), so a model must see both.
var (
	synthShapes   = []string{"circle", "square", "triangle", "cross", "ring", "bars", "diamond"}
	synthColours  = []string{"red", "green", "blue", "yellow", "magenta"}
	synthTextures = []string{"solid", "striped", "dotted"}
	synthRGB      = [][3]float64{{220, 40, 40}, {40, 175, 60}, {50, 85, 225}, {235, 205, 35}, {200, 50, 205}}
)

// MaxSynthClasses is the number of distinct classes Generate can draw.
const MaxSynthClasses = 7 * 5 * 3

// DefaultSynthQuality is the JPEG quality of a generated dataset whose
// SynthOptions leave Quality zero.
const DefaultSynthQuality = 90

// manifestName is written last into a generated dataset; its presence with
// matching options is how EnsureSynthetic knows a dataset is complete.
const manifestName = "stoke-synthetic.json"

// SynthClasses returns the class folder names of a generated dataset with n
// classes, e.g. "00_red_circle", "07_blue_circle_striped".
func SynthClasses(n int) []string {
	names := make([]string, n)
	w := 2
	if n > 100 {
		w = 3
	}
	for c := range names {
		names[c] = fmt.Sprintf("%0*d_%s_%s", w, c, synthColours[c%5], synthShapes[c%7])
		if t := c % 3; t != 0 {
			names[c] += "_" + synthTextures[t]
		}
	}
	return names
}

func (o SynthOptions) withDefaults() SynthOptions {
	if o.Quality == 0 {
		o.Quality = DefaultSynthQuality
	}
	return o
}

// SynthFieldError is a SynthOptions field out of range. Field is the
// field's name as `train gen-data`'s flags and the config's
// data.synthetic keys spell it (classes, train, val, size, quality).
type SynthFieldError struct {
	Field string
	Value int
	Want  string // the range, e.g. "2..105"
}

func (e *SynthFieldError) Error() string {
	return fmt.Sprintf("data: synthetic %s is %d, must be %s", e.Field, e.Value, e.Want)
}

// Check reports the first field out of range as a *SynthFieldError; it is
// what Generate checks, after filling in a zero Quality with
// DefaultSynthQuality, before it writes anything.
func (o SynthOptions) Check() error {
	bad := func(field string, v int, want string) error { return &SynthFieldError{field, v, want} }
	switch {
	case o.Classes < 2 || o.Classes > MaxSynthClasses:
		return bad("classes", o.Classes, fmt.Sprintf("2..%d", MaxSynthClasses))
	case o.Train < 1:
		return bad("train", o.Train, ">= 1 image per class")
	case o.Val < 1:
		return bad("val", o.Val, ">= 1 image per class")
	case o.Size < 16 || o.Size > 4096:
		return bad("size", o.Size, "16..4096 pixels")
	case o.Quality < 1 || o.Quality > 100:
		return bad("quality", o.Quality, "1..100")
	}
	return nil
}

// Generate writes a synthetic ImageFolder dataset to dir:
// dir/train/<class>/NNNNN.jpg and dir/val/<class>/NNNNN.jpg. Each image is
// drawn from its own RNG (seed, split, class, number), so the output is the
// same bytes however many goroutines draw it. The dataset is built in a
// temporary sibling folder and renamed into place at the end: an
// interrupted run never leaves a dataset that looks complete. Generate
// refuses to write into an existing non-empty dir.
func Generate(dir string, opt SynthOptions) error {
	return GenerateContext(context.Background(), dir, opt)
}

// GenerateContext is Generate, stopped by ctx: once ctx is cancelled no
// new image is started, the temporary folder is removed, and ctx's error
// is returned (within an image's time: milliseconds). It first removes
// the temporary folders that earlier, killed generations of dir left
// behind (see removeStalePartials).
func GenerateContext(ctx context.Context, dir string, opt SynthOptions) error {
	opt = opt.withDefaults()
	if err := opt.Check(); err != nil {
		return err
	}
	tmp, err := makeSynthTemp(dir)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed

	classes := SynthClasses(opt.Classes)
	jobs, err := synthJobs(tmp, classes, opt)
	if err != nil {
		return err
	}
	if err := drawSynthJobs(ctx, dir, tmp, classes, jobs, opt); err != nil {
		return err
	}
	return publishSynth(tmp, dir, opt)
}

// makeSynthTemp refuses a non-empty dir, removes the partial folders of
// earlier, killed generations of dir, and makes the temporary sibling
// folder the dataset is built in.
func makeSynthTemp(dir string) (string, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return "", fmt.Errorf("data: %s already exists and is not empty; not overwriting it (remove it or choose another folder)", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("data: checking output folder: %w", err)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("data: making %s: %w", parent, err)
	}
	removeStalePartials(dir)
	tmp, err := os.MkdirTemp(parent, partialPrefix(dir)+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", fmt.Errorf("data: making a temporary folder beside %s: %w", dir, err)
	}
	return tmp, nil
}

// synthJob is one image to draw: its split (0 train, 1 val), class and
// number within the class.
type synthJob struct{ split, class, i int }

// synthJobs makes the split/class folders under tmp and lists every image
// to draw, train before val, class by class.
func synthJobs(tmp string, classes []string, opt SynthOptions) ([]synthJob, error) {
	var jobs []synthJob
	for split, n := range []int{opt.Train, opt.Val} {
		for c, name := range classes {
			d := filepath.Join(tmp, splitNames[split], name)
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, fmt.Errorf("data: %w", err)
			}
			for i := range n {
				jobs = append(jobs, synthJob{split, c, i})
			}
		}
	}
	return jobs, nil
}

// drawSynthJobs draws and writes the jobs' JPEGs under tmp on GOMAXPROCS
// goroutines. It stops at the first error (naming dir, the folder the
// user asked for), or once ctx is cancelled, and returns that error; the
// jobs not started are not drawn.
func drawSynthJobs(ctx context.Context, dir, tmp string, classes []string, jobs []synthJob, opt SynthOptions) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		next     int
	)
	take := func() (synthJob, bool) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil && ctx.Err() != nil {
			firstErr = ctx.Err()
		}
		if firstErr != nil || next >= len(jobs) {
			return synthJob{}, false
		}
		next++
		return jobs[next-1], true
	}
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = fmt.Errorf("data: generating %s: %w", dir, err)
		}
		mu.Unlock()
	}
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			img := image.NewRGBA(image.Rect(0, 0, opt.Size, opt.Size))
			var buf bytes.Buffer
			for j, ok := take(); ok; j, ok = take() {
				p := filepath.Join(tmp, splitNames[j.split], classes[j.class], fmt.Sprintf("%05d.jpg", j.i))
				if err := writeSynthImage(p, img, &buf, j, opt); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil { // cancelled as the last images were drawn: still not wanted
		firstErr = ctx.Err()
	}
	return firstErr
}

// writeSynthImage draws job j into img, encodes it through buf and writes
// it to path p.
func writeSynthImage(p string, img *image.RGBA, buf *bytes.Buffer, j synthJob, opt SynthOptions) error {
	drawSynth(img, opt.Seed, j.split, j.class, j.i)
	buf.Reset()
	if err := jpeg.Encode(buf, img, &jpeg.Options{Quality: opt.Quality}); err != nil {
		return err
	}
	return os.WriteFile(p, buf.Bytes(), 0o644)
}

// publishSynth writes the manifest into the finished tmp folder and renames
// it to dir.
func publishSynth(tmp, dir string, opt SynthOptions) error {
	man, _ := json.MarshalIndent(opt, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, manifestName), append(man, '\n'), 0o644); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp made it 0700
		return fmt.Errorf("data: %w", err)
	}
	os.Remove(dir) // an empty folder may stand where the dataset goes
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("data: moving the generated dataset into place: %w", err)
	}
	return nil
}

var splitNames = [2]string{"train", "val"}

// partialPrefix is how the temporary folders of a generation of dir begin:
// ".NAME.partial-", followed by the generating process's ID, a dash and a
// random suffix.
func partialPrefix(dir string) string {
	return "." + filepath.Base(filepath.Clean(dir)) + ".partial-"
}

// removeStalePartials removes the temporary folders beside dir that a
// generation killed before it could clean up left behind (a second Ctrl-C
// exits at once, kill -9 gives no chance): those whose process is gone,
// and those of the old form without a process ID (".NAME.partial-NNN").
// A folder of a generation still running, in this or another process, is
// kept.
func removeStalePartials(dir string) {
	parent, prefix := filepath.Dir(filepath.Clean(dir)), partialPrefix(dir)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		if pidText, _, hasPID := strings.Cut(rest, "-"); hasPID {
			if pid, err := strconv.Atoi(pidText); err == nil && pid > 0 && processAlive(pid) {
				continue
			}
		}
		os.RemoveAll(filepath.Join(parent, e.Name()))
	}
}

// EnsureSynthetic generates the dataset described by opt in dir if dir does
// not exist, and otherwise checks that dir holds exactly that dataset,
// complete. It reports whether it generated.
func EnsureSynthetic(dir string, opt SynthOptions) (generated bool, err error) {
	return EnsureSyntheticContext(context.Background(), dir, opt)
}

// EnsureSyntheticContext is EnsureSynthetic with a generation that ctx
// stops (GenerateContext).
func EnsureSyntheticContext(ctx context.Context, dir string, opt SynthOptions) (generated bool, err error) {
	opt = opt.withDefaults()
	if err := opt.Check(); err != nil {
		return false, err
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return true, GenerateContext(ctx, dir, opt)
	}
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return false, fmt.Errorf("data: %s exists but is not a complete generated dataset (no %s): remove it to regenerate: %w", dir, manifestName, ErrLayout)
	}
	var got SynthOptions
	if err := json.Unmarshal(b, &got); err != nil {
		return false, fmt.Errorf("data: %s: unreadable %s (%v): remove the folder to regenerate: %w", dir, manifestName, err, ErrLayout)
	}
	if got != opt {
		return false, fmt.Errorf("data: %s holds a generated dataset with other options (%+v, want %+v): remove it or choose another folder: %w", dir, got, opt, ErrLayout)
	}
	train, val, err := Scan(dir)
	if err != nil {
		return false, err
	}
	names := SynthClasses(opt.Classes)
	for _, ix := range []struct {
		idx  *Index
		want int
	}{{train, opt.Train}, {val, opt.Val}} {
		if len(ix.idx.Classes) != len(names) || len(ix.idx.Samples) != ix.want*len(names) {
			return false, fmt.Errorf("data: %s is incomplete: %d classes and %d images, want %d and %d: remove it to regenerate: %w",
				ix.idx.Root, len(ix.idx.Classes), len(ix.idx.Samples), len(names), ix.want*len(names), ErrLayout)
		}
	}
	return false, nil
}

// drawSynth paints image i of class in split: a two-colour gradient
// background, the class's shape in its colour and texture at a random
// position, scale and tilt, then pixel noise. Everything random comes from
// one RNG seeded by (seed, split, class, i).
func drawSynth(img *image.RGBA, seed uint64, split, class, i int) {
	rng := rand.New(rand.NewPCG(mixSeed(tagSynth, seed, uint64(split), uint64(class), uint64(i))))
	s := float64(img.Rect.Dx())
	shape, texture := class%7, class%3
	base := synthRGB[class%5]

	// Background: muted colours, so the saturated shape stands out.
	var bg [2][3]float64
	for k := range bg {
		g := 60 + 130*rng.Float64()
		for ch := range bg[k] {
			bg[k][ch] = g + 30*(rng.Float64()-0.5)
		}
	}
	theta := 2 * math.Pi * rng.Float64()
	gx, gy := math.Cos(theta)/s, math.Sin(theta)/s

	r := s * (0.2 + 0.16*rng.Float64())
	margin := 0.8 * r
	cx := margin + (s-2*margin)*rng.Float64()
	cy := margin + (s-2*margin)*rng.Float64()
	tilt := (rng.Float64() - 0.5) * math.Pi / 6 // ±15°: a square never looks like the diamond
	sinT, cosT := math.Sincos(tilt)
	bright := 0.8 + 0.35*rng.Float64()
	var fg [3]float64
	for ch := range fg {
		fg[ch] = clamp255((base[ch] + 30*(rng.Float64()-0.5)) * bright)
	}
	period := r * (0.45 + 0.15*rng.Float64())
	texAngle := math.Pi * rng.Float64()
	tsin, tcos := math.Sincos(texAngle)

	noise := 6 + 6*rng.Float64()
	for y := 0; y < img.Rect.Dy(); y++ {
		for x := 0; x < img.Rect.Dx(); x++ {
			px, py := float64(x)+0.5, float64(y)+0.5
			t := min(max((px-s/2)*gx+(py-s/2)*gy+0.5, 0), 1)
			dx, dy := px-cx, py-cy
			u, v := cosT*dx+sinT*dy, -sinT*dx+cosT*dy
			cov := min(max(0.5-shapeSDF(shape, u, v, r), 0), 1)
			shade := 1.0
			switch texture {
			case 1: // stripes
				if math.Sin(2*math.Pi*(tcos*dx+tsin*dy)/period) < 0 {
					shade = 0.45
				}
			case 2: // dots
				qx := math.Mod(u+100*period, period) - period/2
				qy := math.Mod(v+100*period, period) - period/2
				if qx*qx+qy*qy < period*period*0.09 {
					shade = 0.4
				}
			}
			o := y*img.Stride + 4*x
			for ch := range 3 {
				c := bg[0][ch]*(1-t) + bg[1][ch]*t
				c = c*(1-cov) + fg[ch]*shade*cov
				c += noise * (rng.Float64() + rng.Float64() - 1)
				img.Pix[o+ch] = uint8(clamp255(c) + 0.5)
			}
			img.Pix[o+3] = 255
		}
	}
}

func clamp255(v float64) float64 { return min(max(v, 0), 255) }

// shapeSDF is the signed distance in pixels from (x, y), relative to the
// shape's centre, to the edge of shape k of radius r: negative inside.
// The formulas are Inigo Quilez's 2D distance functions.
func shapeSDF(k int, x, y, r float64) float64 {
	switch k {
	case 0: // circle
		return math.Hypot(x, y) - r
	case 1: // square
		return boxSDF(x, y, 0.82*r, 0.82*r)
	case 2: // triangle, pointing up, centred on its centroid
		const k3 = 1.7320508075688772
		a := 1.1 * r
		px, py := math.Abs(x)-a, -y+a/k3
		if px+k3*py > 0 {
			px, py = (px-k3*py)/2, (-k3*px-py)/2
		}
		px -= min(max(px, -2*a), 0)
		d := math.Hypot(px, py)
		if py > 0 {
			return -d
		}
		return d
	case 3: // cross
		return min(boxSDF(x, y, r, 0.3*r), boxSDF(x, y, 0.3*r, r))
	case 4: // ring
		return math.Abs(math.Hypot(x, y)-0.72*r) - 0.25*r
	case 5: // bars: three horizontal bars
		d := boxSDF(x, y, r, 0.17*r)
		d = min(d, boxSDF(x, y-0.62*r, r, 0.17*r))
		return min(d, boxSDF(x, y+0.62*r, r, 0.17*r))
	default: // diamond
		return (math.Abs(x) + math.Abs(y) - 1.1*r) / math.Sqrt2
	}
}

func boxSDF(x, y, bx, by float64) float64 {
	qx, qy := math.Abs(x)-bx, math.Abs(y)-by
	return math.Hypot(max(qx, 0), max(qy, 0)) + min(max(qx, qy), 0)
}
