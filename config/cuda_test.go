package config

import (
	"flag"
	"strings"
	"testing"
)

// TestCudaSection: cuda.gemm, cuda.graphs and cuda.cublas read from a file and from
// their flags; a bad value is refused naming the field and the choices,
// whatever the device (a config meant for a GPU fails where it is written).
func TestCudaSection(t *testing.T) {
	c, err := Parse([]byte("cuda:\n  gemm: own\n  graphs: off\n  cublas: /opt/nvidia/lib\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Cuda.Gemm != "own" || c.Cuda.Graphs != "off" || c.Cuda.Cublas != "/opt/nvidia/lib" || c.Validate() != nil {
		t.Errorf("cuda section not read: %+v (%v)", c.Cuda, c.Validate())
	}
	if d := Default(); d.Cuda.Gemm != "auto" || d.Cuda.Graphs != "auto" || d.Cuda.Cublas != "" {
		t.Errorf("default cuda section %+v, want gemm and graphs auto and cublas empty", d.Cuda)
	}
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	set := BindFlags(fs)
	if err := fs.Parse([]string{"--cuda.gemm=cublas", "--cuda.graphs=on", "--cuda.cublas", "/x/libcublas.so.12"}); err != nil {
		t.Fatal(err)
	}
	c = Default()
	if err := c.Apply(*set); err != nil {
		t.Fatal(err)
	}
	if c.Cuda.Gemm != "cublas" || c.Cuda.Graphs != "on" || c.Cuda.Cublas != "/x/libcublas.so.12" {
		t.Errorf("flags not applied: %+v", c.Cuda)
	}
	for _, tc := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Cuda.Gemm = "cudnn" }, `cuda.gemm: must be auto, cublas or own, got "cudnn"`},
		{func(c *Config) { c.Cuda.Gemm = "" }, `cuda.gemm: must be auto, cublas or own, got ""`},
		{func(c *Config) { c.Cuda.Graphs = "yes" }, `cuda.graphs: must be auto, on or off, got "yes"`},
		{func(c *Config) { c.Cuda.Cublas = " /x" }, `cuda.cublas: must be a file or folder path without leading or trailing spaces`},
	} {
		c := Default()
		tc.mut(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	if _, err := Parse([]byte("cuda:\n  gem: own\n"), "c.yaml"); err == nil || !strings.Contains(err.Error(), "cuda.gem") {
		t.Errorf("unknown key cuda.gem: %v", err)
	}
}
