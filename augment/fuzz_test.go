package augment

import (
	"fmt"
	"math"
	"testing"
)

// FuzzTrain runs the training transform over image sizes, output sizes,
// DCT scales and jitter factors: it must not panic, the vector and pure-Go
// paths must agree bit for bit, and both must match the legacy code
// (within legacyTolerance where contrast is on).
func FuzzTrain(f *testing.F) {
	f.Add(uint16(1), uint16(1), uint16(1), uint8(0), 0.4, 0.4, 0.4, uint64(1), false)
	f.Add(uint16(256), uint16(256), uint16(224), uint8(0), 0.4, 0.4, 0.4, uint64(2), false)
	f.Add(uint16(256), uint16(256), uint16(64), uint8(1), 0.4, 0.4, 0.4, uint64(3), true)
	f.Add(uint16(97), uint16(13), uint16(33), uint8(3), 1.0, 0.0, 2.5, uint64(4), false)
	f.Add(uint16(5), uint16(300), uint16(7), uint8(2), 0.0, 1.0, 0.0, uint64(5), true)
	f.Fuzz(func(t *testing.T, w, h, size uint16, scaleLog uint8, b, c, s float64, seed uint64, u8 bool) {
		W, H, S := int(w%400)+1, int(h%400)+1, int(size%256)+1
		scale := 1 << (scaleLog % 4)
		for _, v := range []*float64{&b, &c, &s} {
			if !(*v >= 0) || *v > 10 { // NewTrain refuses NaN and negatives; keep factors sane
				*v = math.Mod(math.Abs(*v), 10)
				if math.IsNaN(*v) {
					*v = 0
				}
			}
		}
		p := DefaultTrainParams(S)
		p.Brightness, p.Contrast, p.Saturation = b, c, s
		tr, err := NewTrain(p)
		if err != nil {
			t.Fatal(err)
		}
		rng := newRand(seed)
		img := randomImage(rng, (W+scale-1)/scale, (H+scale-1)/scale, seed%2 == 1)
		src, _, _ := tr.Region(W, H, newRand(seed))
		run := func(vec bool) ([]float32, []uint8) {
			var f32 []float32
			var u []uint8
			if u8 {
				u = make([]uint8, 3*S*S)
			} else {
				f32 = make([]float32, 3*S*S)
			}
			withPath(vec, func() {
				r := newRand(seed)
				tr.Region(W, H, r)
				if err := tr.ApplyRegion(img, scale, src, r, f32, u); err != nil {
					t.Fatal(err)
				}
			})
			return f32, u
		}
		vf, vu := run(true)
		gf, gu := run(false)
		if i := sameBits(vf, gf); i >= 0 || string(vu) != string(gu) {
			t.Fatalf("vector and Go paths differ (value %d)", i)
		}
		var lf []float32
		var lu []uint8
		if u8 {
			lu = make([]uint8, 3*S*S)
		} else {
			lf = make([]float32, 3*S*S)
		}
		r := newRand(seed)
		tr.Region(W, H, r)
		tr.legacyApplyRegion(&legacyScratch{}, img, scale, src, r, lf, lu)
		compareLegacy(t, fmt.Sprintf("%dx%d/%d to %d, jitter %g %g %g", W, H, scale, S, b, c, s), gf, lf, gu, lu, p.Std, c > 0)
	})
}
