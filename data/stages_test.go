package data

import (
	"testing"
)

// TestStagesAreTheLoaders: running one sample's stages by hand (ReadFile,
// DecodeHeader, PlanCrop, DecodeScaled, ApplyCrop), as bench-data times
// them, gives every batch slot of a loader's epoch bit for bit, with DCT
// scaling on and off and for both batch types; so what the benchmark times
// is the loader's own work, not a copy of it.
func TestStagesAreTheLoaders(t *testing.T) {
	_, idx := testDataset(t)
	for _, noScale := range []bool{false, true} {
		for _, dtype := range []string{DTypeFloat32, DTypeUint8} {
			cfg := augmentCfg(t, idx) // 8 px from 24: crops of 16 px or more decode at 1/2 with libjpeg-turbo
			cfg.DType, cfg.NoDCTScale = dtype, noScale
			const epoch = 1
			xs, us, _, ns := loadEpochN(t, cfg, epoch)
			tf := cfg.Transform.(RegionTransform)
			dec := Decoder{MaxPixels: cfg.MaxPixels, MaxBytes: cfg.MaxDecodeBytes, Kind: cfg.Decoder}
			src := NewSampleSource()
			perm := Permutation(len(idx.Samples), cfg.Seed, epoch, cfg.Shuffle)
			n := 3 * 8 * 8
			scaled := 0
			for bi := range ns {
				for j := range ns[bi] {
					k := perm[bi*cfg.BatchSize+j]
					path := idx.Samples[k].Path
					file, err := dec.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					h, err := dec.DecodeHeader(path, file)
					if err != nil {
						t.Fatal(err)
					}
					rng := src.For(cfg.Seed, epoch, k)
					c := PlanCrop(tf, h, rng, cfg.NoDCTScale)
					img, scale, err := dec.DecodeScaled(path, file, h, c.Scale)
					if err != nil {
						t.Fatal(err)
					}
					if scale > 1 {
						scaled++
					}
					f32, u8 := make([]float32, n), make([]uint8, n)
					if dtype == DTypeUint8 {
						f32 = nil
					} else {
						u8 = nil
					}
					if err := ApplyCrop(tf, img, scale, c, rng, path, f32, u8); err != nil {
						t.Fatal(err)
					}
					if dtype == DTypeUint8 && string(u8) != string(us[bi][j*n:(j+1)*n]) ||
						dtype == DTypeFloat32 && !equalBits(f32, xs[bi][j*n:(j+1)*n]) {
						t.Fatalf("no-dct-scale %v, %s: batch %d slot %d (sample %d): the stages differ from the loader", noScale, dtype, bi, j, k)
					}
				}
			}
			if noScale && scaled > 0 {
				t.Errorf("%s: %d samples decoded scaled with NoDCTScale", dtype, scaled)
			}
			t.Logf("no-dct-scale %v, %s: %d batches match, %d samples decoded at a reduced scale", noScale, dtype, len(ns), scaled)
		}
	}
}
