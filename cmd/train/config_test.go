package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestConfigByNameFromAnyFolder: --config finds a shipped config by name,
// and by its path in the repository, from a folder that holds no configs/
// (the README's commands failed outside the repository).
func TestConfigByNameFromAnyFolder(t *testing.T) {
	t.Chdir(t.TempDir())
	want, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"quickstart", "quickstart.yaml", "configs/quickstart.yaml"} {
		got, err := loadConfig(name)
		if err != nil {
			t.Errorf("--config %s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("--config %s is not the built-in quickstart", name)
		}
	}
	blog, err := loadConfig("configs/blog.yaml")
	if err != nil || blog.Train.Out != "runs/blog" {
		t.Errorf("--config configs/blog.yaml: %v, out %q", err, blog.Train.Out)
	}
	// A file on disk is read before a shipped config of the same name.
	os.WriteFile("quickstart.yaml", []byte("train: {epochs: 3}\n"), 0o644)
	if got, err := loadConfig("quickstart.yaml"); err != nil || got.Train.Epochs != 3 {
		t.Errorf("--config quickstart.yaml beside a file of that name: %v, epochs %d; want the file's 3", err, got.Train.Epochs)
	}
	_, err = loadConfig("quickstrt")
	if err == nil || !strings.Contains(err.Error(), "no such file") || !strings.Contains(err.Error(), "quickstart") {
		t.Errorf("--config quickstrt: %v; want an error listing the shipped configs", err)
	}
	// An empty file is the quickstart's settings (train.out aside): one set
	// of defaults.
	os.WriteFile(filepath.Join("empty.yaml"), nil, 0o644)
	got, err := loadConfig("empty.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got.Train.Out = want.Train.Out
	if !reflect.DeepEqual(got, want) {
		t.Errorf("an empty config file is not the quickstart's settings: scale %v brightness %v synthetic %+v",
			got.Augment.Scale, got.Augment.Brightness, got.Data.Synthetic)
	}
}
