package config

import (
	"flag"
	"math"
	"reflect"
	"strings"
	"testing"

	"stoke/model"
)

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("Default() does not validate: %v", err)
	}
}

func TestParseErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown key with hint", "data:\n  batch_sise: 3\n", []string{"line 2", `"data.batch_sise"`, `did you mean "data.batch_size"`}},
		{"unknown section", "optimizer:\n  lr: 1\n", []string{`"optimizer"`, `did you mean "optim"`}},
		{"unknown key in conv block", "model:\n  conv:\n    - {channels: 3, kernl: 3}\n", []string{`"model.conv[0].kernl"`, `"model.conv[0].kernel"`}},
		{"wrong type", "data:\n  batch_size: many\n", []string{"line 2: data.batch_size: `many` is not a whole number"}},
		{"wrong type in a list", "augment:\n  scale: [0.1, big]\n", []string{"line 2: augment.scale", "`big` is not a number"}},
		{"section not a mapping", "data: 3\n", []string{"data must be a mapping"}},
		{"duplicate key", "train:\n  epochs: 1\n  epochs: 2\n", []string{`"train.epochs" appears twice`}},
		{"two documents", "train: {epochs: 1}\n---\ntrain: {epochs: 2}\n", []string{"more than one YAML document"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "x.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, "x.yaml") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestParseOverridesDefaultsAndReplacesLists(t *testing.T) {
	c, err := Parse([]byte("augment:\n  scale: [0.5, 1]\nmodel:\n  conv:\n    - {channels: 8, kernel: 5}\ntrain:\n  epochs: 9\n"), "x")
	if err != nil {
		t.Fatal(err)
	}
	if c.Train.Epochs != 9 || c.Data.BatchSize != Default().Data.BatchSize {
		t.Errorf("epochs %d batch %d: the file's value and the default should both hold", c.Train.Epochs, c.Data.BatchSize)
	}
	if !reflect.DeepEqual(c.Augment.Scale, []float64{0.5, 1}) {
		t.Errorf("scale = %v", c.Augment.Scale)
	}
	if len(c.Model.Conv) != 1 || c.Model.Conv[0].Channels != 8 || c.Model.Conv[0].Kernel != 5 {
		t.Errorf("conv = %+v, want the file's single block", c.Model.Conv)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	c := Default()
	c.Data.Root = "/some/where"
	c.Optim.LR = 0.0125
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b, "resolved.yaml")
	if err != nil {
		t.Fatalf("resolved config does not parse: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip changed the config:\n%+v\n%+v", back, c)
	}
}

func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	set := BindFlags(fs)
	err := fs.Parse([]string{"--batch-size=8", "--pin-memory", "--optim.lr", "0.5", "--augment.scale=0.3,0.9",
		"--model.conv=[{channels: 4, kernel: 3, pool: true}]", "--data", "/d"})
	if err != nil {
		t.Fatal(err)
	}
	c := Default()
	if err := c.Apply(*set); err != nil {
		t.Fatal(err)
	}
	if c.Data.BatchSize != 8 || !c.Data.PinMemory || c.Optim.LR != 0.5 || c.Data.Root != "/d" {
		t.Errorf("flags not applied: %+v %+v", c.Data, c.Optim)
	}
	if !reflect.DeepEqual(c.Augment.Scale, []float64{0.3, 0.9}) || len(c.Model.Conv) != 1 || !c.Model.Conv[0].Pool {
		t.Errorf("list flags not applied: %v %+v", c.Augment.Scale, c.Model.Conv)
	}

	fs = flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	BindFlags(fs)
	if err := fs.Parse([]string{"--epochs=two"}); err == nil || !strings.Contains(err.Error(), "train.epochs") {
		t.Errorf("bad flag value: error %v should name train.epochs", err)
	}
}

func TestValidateNamesFields(t *testing.T) {
	for _, tc := range []struct {
		field string
		mut   func(*Config)
	}{
		{"data.batch_size", func(c *Config) { c.Data.BatchSize = 0 }},
		{"data.workers", func(c *Config) { c.Data.Workers = -1 }},
		{"optim.lr", func(c *Config) { c.Optim.LR = 0 }},
		{"augment.scale", func(c *Config) { c.Augment.Scale = []float64{0.5, 1.5} }},
		{"augment.scale", func(c *Config) { c.Augment.Scale = []float64{0} }},
		{"augment.std[1]", func(c *Config) { c.Augment.Std[1] = 0 }},
		{"model.conv[0].kernel", func(c *Config) { c.Model.Conv[0].Kernel = 2 }},
		{"train.device", func(c *Config) { c.Train.Device = "tpu" }},
		{"data.bad_images", func(c *Config) { c.Data.BadImages = "ignore" }},
		{"train.dist", func(c *Config) { c.Train.Dist = "gloo" }},
		{"train.dist_timeout", func(c *Config) { c.Train.DistTimeout = 0 }},
		{"train.dist_bucket_mb", func(c *Config) { c.Train.DistBucketMB = -1 }},
		{"data.synthetic.classes", func(c *Config) { c.Data.Synthetic.Classes = 1000 }},
		{"data.synthetic.size", func(c *Config) { c.Data.Synthetic.Size = 8 }},
		{"data.synthetic.val", func(c *Config) { c.Data.Synthetic.Val = 0 }},
	} {
		c := Default()
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: error %v should name the field", tc.field, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("data:\n  batch_size: 3\n"))
	f.Add([]byte("model:\n  conv:\n    - {channels: 3, kernel: 3}\n"))
	f.Add([]byte("augment: {scale: [0.1, 1]}"))
	f.Add([]byte("- a\n- b"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b, "fuzz.yaml")
		if err != nil {
			return
		}
		_ = c.Validate() // must not panic
		if _, err := c.Marshal(); err != nil {
			t.Fatalf("parsed config does not marshal: %v", err)
		}
	})
}

// TestWholeNumbers: a whole-number setting refuses a fraction (it was
// truncated: --epochs 2.5 ran 2 epochs), in a file and on the command line
// alike, and a quoted number reads as its text in both.
func TestWholeNumbers(t *testing.T) {
	for _, tc := range []struct {
		yaml, flagPath, flagValue string
		want                      int    // epochs or batch size when accepted
		err                       string // else the error's text
	}{
		{"train: {epochs: 2.5}", "train.epochs", "2.5", 0, "train.epochs: 2.5 is not a whole number"},
		{"data: {batch_size: 3.7}", "data.batch_size", "3.7", 0, "data.batch_size: 3.7 is not a whole number"},
		{"data: {batch_size: 1e30}", "data.batch_size", "1e30", 0, "out of range"},
		{"model: {conv: [{channels: 1.5, kernel: 3}]}", "model.conv", "[{channels: 1.5, kernel: 3}]", 0, "model.conv[0].channels: 1.5 is not a whole number"},
		{"train: {epochs: \"3\"}", "train.epochs", `"3"`, 3, ""},
		{"train: {epochs: '3'}", "train.epochs", "3", 3, ""},
		{"train: {epochs: 3.0}", "train.epochs", "3.0", 3, ""},
		{"data: {batch_size: 1e3}", "data.batch_size", "1e3", 1000, ""},
		{"train: {epochs: \"2.5\"}", "train.epochs", `"2.5"`, 0, "2.5 is not a whole number"},
	} {
		fromFile, ferr := Parse([]byte(tc.yaml+"\n"), "x.yaml")
		fromFlag := Default()
		gerr := fromFlag.Apply([]Override{{tc.flagPath, tc.flagValue}})
		for _, r := range []struct {
			how string
			c   Config
			err error
		}{{"file " + tc.yaml, fromFile, ferr}, {"flag --" + tc.flagPath + "=" + tc.flagValue, fromFlag, gerr}} {
			if tc.err != "" {
				if r.err == nil || !strings.Contains(r.err.Error(), tc.err) {
					t.Errorf("%s: error %v, want one saying %q", r.how, r.err, tc.err)
				}
				if r.err != nil && strings.HasPrefix(r.how, "flag") && strings.Contains(r.err.Error(), "line ") {
					t.Errorf("%s: error %q names a line; a flag has none", r.how, r.err)
				}
				continue
			}
			if r.err != nil {
				t.Errorf("%s: %v", r.how, r.err)
				continue
			}
			got := r.c.Train.Epochs
			if strings.Contains(tc.flagPath, "batch") {
				got = r.c.Data.BatchSize
			}
			if got != tc.want {
				t.Errorf("%s: got %d, want %d", r.how, got, tc.want)
			}
		}
	}
	// Quoted numbers and switches read as their text everywhere, not only
	// for whole numbers.
	c, err := Parse([]byte("optim: {lr: \"0.25\"}\ndata: {pin_memory: 'true'}\n"), "x.yaml")
	if err != nil || c.Optim.LR != 0.25 || !c.Data.PinMemory {
		t.Errorf("quoted lr and pin_memory: %v, lr %v pin %v", err, c.Optim.LR, c.Data.PinMemory)
	}
}

// TestLimitsOfTheMachineAndTheModel: settings no machine can run are
// refused by Validate, naming the limit.
func TestLimitsOfTheMachineAndTheModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want string // "" = valid
	}{
		{"threads at the bound", func(c *Config) { c.Train.Threads = MaxThreads }, ""},
		{"threads over the bound", func(c *Config) { c.Train.Threads = 1_000_000 }, "train.threads: must be 0 (all cores) to 1024, got 1000000"},
		{"kernel as large as its input", func(c *Config) { c.Data.ImageSize = 15; c.Model.Conv = []model.ConvSpec{{Channels: 4, Kernel: 15}} }, ""},
		{"kernel larger than its input", func(c *Config) { c.Data.ImageSize = 16; c.Model.Conv = []model.ConvSpec{{Channels: 4, Kernel: 10001}} }, "model.conv[0].kernel: 10001 is larger than the block's 16x16 px input"},
		{"kernel larger than its input after pools", func(c *Config) {
			c.Data.ImageSize = 32
			c.Model.Conv = []model.ConvSpec{{Channels: 4, Kernel: 3, Pool: true}, {Channels: 4, Kernel: 3, Pool: true}, {Channels: 4, Kernel: 9}}
		}, "model.conv[2].kernel: 9 is larger than the block's 8x8 px input (data.image_size 32 after 2 pools); at most 7"},
		{"a pool of a 1 px input", func(c *Config) {
			c.Data.ImageSize = 2
			c.Model.Conv = []model.ConvSpec{{Channels: 4, Kernel: 1, Pool: true}, {Channels: 4, Kernel: 1, Pool: true}}
		}, "model.conv[1].pool: a 1x1 px input cannot be pooled"},
		{"256 blocks", func(c *Config) { c.Model.Conv = make([]model.ConvSpec, 256); fillConv(c.Model.Conv) }, ""},
		{"100000 blocks", func(c *Config) { c.Model.Conv = make([]model.ConvSpec, 100_000); fillConv(c.Model.Conv) }, "model.conv: has 100000 conv blocks; at most 256"},
	} {
		c := Default()
		tc.edit(&c)
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func fillConv(blocks []model.ConvSpec) {
	for i := range blocks {
		blocks[i] = model.ConvSpec{Channels: 4, Kernel: 3}
	}
}

// TestMaxPixelsIsBounded: a pixel limit near 2^63 overflowed the loader's
// byte arithmetic into a negative limit that refused every image; it is
// refused here, with the bound named. The decode budget must be positive.
func TestMaxPixelsIsBounded(t *testing.T) {
	c := Default()
	c.Data.MaxPixels = math.MaxInt
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "data.max_pixels: must be at most 4294967296") {
		t.Errorf("max_pixels %d: error %v, want one naming data.max_pixels and its bound", c.Data.MaxPixels, err)
	}
	c.Data.MaxPixels = 1 << 32
	if err := c.Validate(); err != nil {
		t.Errorf("max_pixels 2^32: %v", err)
	}
	c.Data.MaxDecode = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "data.max_decode_bytes:") {
		t.Errorf("max_decode_bytes 0: error %v, want one naming data.max_decode_bytes", err)
	}
}
