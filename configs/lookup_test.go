package configs

import (
	"reflect"
	"slices"
	"testing"

	"stoke/config"
)

func TestLookupFindsShippedConfigsByName(t *testing.T) {
	for _, name := range []string{"quickstart", "quickstart.yaml", "configs/quickstart.yaml", "./configs/quickstart.yaml", "/somewhere/else/configs/quickstart.yaml"} {
		file, text, ok := Lookup(name)
		want, _ := FS.ReadFile("quickstart.yaml")
		if !ok || file != "quickstart.yaml" || string(text) != string(want) {
			t.Errorf("Lookup(%q) = %q, %d bytes, %v; want the embedded quickstart.yaml", name, file, len(text), ok)
		}
	}
	for _, name := range []string{"", "quickstrt", "quickstart.yml", "other/quickstart.yaml", "../quickstart", "mine.yaml"} {
		if file, _, ok := Lookup(name); ok {
			t.Errorf("Lookup(%q) found %q; it names no shipped config", name, file)
		}
	}
	if got := Names(); !slices.Equal(got, []string{"blog", "imagenet-resnet50-ffcv", "imagenet-resnet50", "quickstart", "ref-cnn", "resnet18", "resnet20-cifar"}) {
		t.Errorf("Names() = %v", got)
	}
}

// TestOneSetOfDefaults: a config file layers over the quickstart's values,
// which docs/config.md shows; an empty file is the quickstart (it was a
// second, hidden set: scale 0.08, no colour jitter, a 200/50 dataset).
func TestOneSetOfDefaults(t *testing.T) {
	b, _ := FS.ReadFile(Default)
	qs, err := config.Parse(b, Default)
	if err != nil {
		t.Fatal(err)
	}
	empty, err := config.Parse(nil, "empty.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if qs.Train.Out != "runs/quickstart" || empty.Train.Out != "runs/default" {
		t.Errorf("train.out: quickstart %q, defaults %q; want runs/quickstart and runs/default", qs.Train.Out, empty.Train.Out)
	}
	empty.Train.Out = qs.Train.Out // the one setting the quickstart file adds
	if !reflect.DeepEqual(empty, qs) {
		a, _ := empty.Marshal()
		b, _ := qs.Marshal()
		t.Errorf("an empty config file differs from the quickstart:\n--- empty\n%s\n--- quickstart\n%s", a, b)
	}
}
