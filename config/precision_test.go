package config

import (
	"strings"
	"testing"

	"stoke/gemm"
)

// TestPrecisionSetting: train.precision takes fp32, tf32 and bf16 (flag
// --precision), reaches the model's options, and refuses anything else
// naming the choices; cuda is refused anything but fp32 until its cuBLAS
// path lands.
func TestPrecisionSetting(t *testing.T) {
	if d := Default(); d.Train.Precision != "fp32" || d.ModelOptions().Precision != gemm.FP32 {
		t.Errorf("default precision %q (model %v), want fp32", d.Train.Precision, d.ModelOptions().Precision)
	}
	for _, p := range gemm.Precisions {
		c := Default()
		if err := c.Apply([]Override{{Path: "train.precision", Value: p.String()}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("--precision %v: %v", p, err)
		}
		if got := c.ModelOptions().Precision; got != p {
			t.Errorf("--precision %v: model options at %v", p, got)
		}
	}
	for _, s := range []string{"fp16", "", "BF16", "auto"} {
		c := Default()
		c.Train.Precision = s
		err := c.Validate()
		if want := `train.precision: must be fp32, tf32 or bf16, got "` + s + `"`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("precision %q: err %v, want %q", s, err, want)
		}
	}
	c := Default()
	for _, p := range []string{"fp32", "tf32", "bf16"} {
		c.Train.Device, c.Train.Precision = "cuda", p
		if err := c.Validate(); err != nil {
			t.Errorf("cuda at %s: %v", p, err)
		}
	}
	if ResumeChangeable("train.precision") {
		t.Error("a resume may change train.precision: it changes every number of the run")
	}
}
