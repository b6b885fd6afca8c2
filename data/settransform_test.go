package data

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"stoke/augment"
)

// TestLoaderSetTransformIsAFreshLoader: a loader whose buffers are sized
// for 16 px, given a 5 px and then a 16 px transform between epochs (the
// side progressive resizing changes), makes each epoch's batches exactly
// as a loader built for that side does: the same pixels (its DCT scale
// drawn from that side's crop), labels and padding, in float32 and uint8,
// inline and with workers.
func TestLoaderSetTransformIsAFreshLoader(t *testing.T) {
	_, idx := testDataset(t)
	tf := func(size int) *augment.Train {
		tr, err := augment.NewTrain(augment.DefaultTrainParams(size))
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	for _, dtype := range []string{DTypeFloat32, DTypeUint8} {
		for _, workers := range []int{0, 2} {
			t.Run(fmt.Sprintf("%s/%d", dtype, workers), func(t *testing.T) {
				cfg := LoaderConfig{Index: idx, Transform: tf(16), BatchSize: 4, Workers: workers, Prefetch: 2, Shuffle: true, Seed: 3, DType: dtype}
				grow := cfg
				grow.Transform, grow.MaxSize = tf(5), 16
				l, err := NewLoader(grow)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				for epoch, size := range []int{5, 16, 5} {
					if err := l.SetTransform(tf(size)); err != nil {
						t.Fatal(err)
					}
					if l.Size() != size {
						t.Fatalf("Size() = %d after SetTransform(%d px)", l.Size(), size)
					}
					fresh := cfg
					fresh.Transform = tf(size)
					wantX, wantU, wantL := loadEpoch(t, fresh, epoch)
					it := l.Epoch(context.Background(), epoch)
					for i := 0; ; i++ {
						b, err := it.Next()
						if err != nil {
							if i != len(wantL) {
								t.Fatalf("epoch %d (%d px): %d batches then %v, want %d", epoch, size, i, err, len(wantL))
							}
							break
						}
						if len(b.X) != len(wantX[i]) || len(b.U8) != len(wantU[i]) || !equalBits(b.X, wantX[i]) || string(b.U8) != string(wantU[i]) || !slicesEqual(b.Labels, wantL[i]) {
							t.Fatalf("epoch %d (%d px) batch %d: differs from a loader built for %d px (%d floats, %d bytes; want %d, %d)", epoch, size, i, size, len(b.X), len(b.U8), len(wantX[i]), len(wantU[i]))
						}
						b.Release()
					}
					it.Close()
				}
			})
		}
	}
}

// TestLoaderSetTransformRefuses: a side larger than the buffers, an epoch
// being read, a batch not released, MaxSize below the first side.
func TestLoaderSetTransformRefuses(t *testing.T) {
	_, idx := testDataset(t)
	tf := func(size int) *augment.Train {
		tr, err := augment.NewTrain(augment.DefaultTrainParams(size))
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	if _, err := NewLoader(LoaderConfig{Index: idx, Transform: tf(8), BatchSize: 2, MaxSize: 7}); err == nil || !strings.Contains(err.Error(), "MaxSize is 7") {
		t.Errorf("MaxSize 7 below an 8 px transform: %v", err)
	}
	l, err := NewLoader(LoaderConfig{Index: idx, Transform: tf(8), BatchSize: 2, MaxSize: 12})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetTransform(tf(13)); err == nil || !strings.Contains(err.Error(), "[1, 12]") {
		t.Errorf("13 px into 12 px buffers: %v", err)
	}
	it := l.Epoch(context.Background(), 0)
	b, err := it.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetTransform(tf(12)); err == nil || !strings.Contains(err.Error(), "while an epoch is being read") {
		t.Errorf("during an epoch: %v", err)
	}
	it.Close()
	if err := l.SetTransform(tf(12)); err == nil || !strings.Contains(err.Error(), "not released") {
		t.Errorf("with a batch held: %v", err)
	}
	b.Release()
	if err := l.SetTransform(tf(12)); err != nil {
		t.Errorf("after the release: %v", err)
	}
}

// TestSetTransformExercisesTheDCTScale: on the test images (24 px) the
// 5 px epochs of TestLoaderSetTransformIsAFreshLoader decode some crops at
// a reduced DCT scale and the 16 px ones none, so that test compares
// batches whose decode scale follows the epoch's side.
func TestSetTransformExercisesTheDCTScale(t *testing.T) {
	_, idx := testDataset(t)
	reduced := map[int]int{}
	src := NewSampleSource()
	for _, size := range []int{5, 16} {
		tr, err := augment.NewTrain(augment.DefaultTrainParams(size))
		if err != nil {
			t.Fatal(err)
		}
		for epoch := range 3 {
			for i, s := range idx.Samples {
				var dec Decoder
				file, err := dec.ReadFile(s.Path)
				if err != nil {
					t.Fatal(err)
				}
				h, err := dec.DecodeHeader(s.Path, file)
				if err != nil {
					t.Fatal(err)
				}
				if !h.Scalable {
					t.Skip("this decoder does not scale in the DCT domain")
				}
				if PlanCrop(tr, h, src.For(3, epoch, i), false).Scale > 1 {
					reduced[size]++
				}
			}
		}
	}
	if reduced[5] == 0 || reduced[16] != 0 {
		t.Errorf("crops decoded at a reduced scale: %d at 5 px, %d at 16 px; want some, none", reduced[5], reduced[16])
	}
}
