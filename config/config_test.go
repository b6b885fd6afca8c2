package config

import (
	"flag"
	"reflect"
	"strings"
	"testing"
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
