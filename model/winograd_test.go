package model_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"stoke/gemm"
	"stoke/internal/statehash"
	"stoke/model"
)

// TestWinogradOption: Options.Winograd reaches the CPU engine's convs
// (resnet18's 64-channel stage at 32 px takes F(2x2, 3x3): the state after
// a step differs from the GEMM's), the step's loss agrees with the GEMM's
// to float32 rounding, and at bf16, where it does not apply, the state is
// the GEMM's to the bit.
func TestWinogradOption(t *testing.T) {
	spec := model.Spec{Arch: "resnet18", Stem: model.StemCIFAR, InputSize: 32, Classes: 5}
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 2*3*32*32)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	labels := []int32{1, 3}
	run := func(prec gemm.Precision, wino bool) (float64, string) {
		m, err := model.New(spec, model.Options{Batch: 2, Momentum: 0.9, Precision: prec, Winograd: wino})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		r, err := m.TrainStep(x, labels, 2, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		params, opt, err := m.State()
		if err != nil {
			t.Fatal(err)
		}
		return r.Loss, statehash.Hash(params, opt)
	}
	loss, hash := run(gemm.FP32, false)
	wLoss, wHash := run(gemm.FP32, true)
	if wHash == hash {
		t.Error("Winograd on: the same state as the GEMM's (it did not apply)")
	}
	if d := math.Abs(wLoss - loss); d > 1e-5*math.Abs(loss) {
		t.Errorf("loss %v with Winograd, %v without: they differ by more than float32 rounding", wLoss, loss)
	}
	_, bHash := run(gemm.BF16, false)
	_, bwHash := run(gemm.BF16, true)
	if bwHash != bHash {
		t.Error("at bf16 Winograd changed the state (it is fp32 only)")
	}
	if model.WinogradNote(model.Options{}) != "" ||
		model.WinogradNote(model.Options{Winograd: true, Precision: gemm.BF16}) == "" {
		t.Error("WinogradNote: off should say nothing, and on at bf16 should say it changes nothing")
	}
}
