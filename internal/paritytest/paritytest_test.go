package paritytest

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"stoke/model"
)

func tapped(t *testing.T, tap *Tap) *model.Model {
	t.Helper()
	m, err := model.NewOn(tap.Tapped(), model.Spec{Arch: "resnet20", InputSize: 8, Classes: 3}, model.Options{Batch: 2, Seed: 5, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func step(t *testing.T, m *model.Model, tap *Tap) error {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 2*3*8*8)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	tap.Record(true)
	_, err := TrainStep(m, x, []int32{0, 2}, 2, 0)
	tap.Record(false)
	if err != nil {
		t.Fatal(err)
	}
	return tap.Err
}

// TestTapRecordsTheBranch: resnet20's 19 ReLUs (the stem, and each of 9
// blocks' fused BatchNorm+ReLU and residual add+ReLU), as masks, in order;
// nothing outside Record.
func TestTapRecordsTheBranch(t *testing.T) {
	tap := &Tap{Engine: model.CPUEngine()}
	m := tapped(t, tap)
	if _, err := m.Logits(model.Input{X: make([]float32, 2*3*8*8), N: 2}); err != nil || len(tap.Branch) != 0 {
		t.Fatalf("eval forward, not recording: %d tensors kept (err %v)", len(tap.Branch), err)
	}
	if err := step(t, m, tap); err != nil {
		t.Fatal(err)
	}
	if len(tap.Branch) != 19 {
		t.Fatalf("%d ReLUs recorded, want 19", len(tap.Branch))
	}
	var open, shut int
	for k, b := range tap.Branch {
		if want := "relu." + strconv.Itoa(k); b.Name != want {
			t.Fatalf("tensor %d is %s, want %s", k, b.Name, want)
		}
		for _, v := range b.Data {
			switch v {
			case 1:
				open++
			case 0:
				shut++
			default:
				t.Fatalf("%s holds %v: not a mask", b.Name, v)
			}
		}
	}
	if open == 0 || shut == 0 {
		t.Fatalf("masks with %d open and %d shut values", open, shut)
	}
}

// TestTapFollows: a tap following another's recording of the same step
// takes its side where the open value is within rounding (counted in
// Followed), and fails where it is not.
func TestTapFollows(t *testing.T) {
	cpu := func() model.Engine { return model.CPUEngine() }
	ref := &Tap{Engine: cpu(), Raw: true}
	if err := step(t, tapped(t, ref), ref); err != nil {
		t.Fatal(err)
	}
	run := func(edit func(d []float32)) *Tap {
		r := &Tap{Engine: cpu(), Raw: true}
		r.Branch = make([]model.NamedTensor, len(ref.Branch))
		for k, b := range ref.Branch {
			b.Data = append([]float32(nil), b.Data...)
			r.Branch[k] = b
		}
		edit(r.Branch[4].Data)
		f := &Tap{Engine: cpu(), Raw: true, Follow: r, Within: 1e-5}
		f.Err = step(t, tapped(t, f), f)
		return f
	}
	if f := run(func([]float32) {}); f.Err != nil || f.Followed != 0 {
		t.Fatalf("following the same step on the same engine: %d followed, err %v", f.Followed, f.Err)
	}
	shut := func(d []float32) int {
		for i, v := range d {
			if v == 0 {
				return i
			}
		}
		t.Fatal("relu.4 has no shut value")
		return 0
	}
	f := run(func(d []float32) { d[shut(d)] = 1e-7 })
	if f.Err != nil || f.Followed != 1 {
		t.Fatalf("one value opened by 1e-7 on the followed side: %d followed, err %v", f.Followed, f.Err)
	}
	var top float32
	for _, v := range ref.Branch[4].Data {
		top = max(top, v)
	}
	if g := f.Branch[4].Data[shut(ref.Branch[4].Data)]; g != 1e-7 {
		t.Fatalf("the follower's value there is %g, want the followed side's 1e-7", g)
	}
	f = run(func(d []float32) { d[shut(d)] = top / 2 })
	if f.Err == nil || !strings.Contains(f.Err.Error(), "beyond rounding") {
		t.Fatalf("one value opened by half the largest output: err %v, want one saying beyond rounding", f.Err)
	}
}
