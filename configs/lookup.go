package configs

import (
	"io/fs"
	"path/filepath"
	"strings"
)

// Names lists the shipped configs by name, without ".yaml": "blog",
// "quickstart", "ref-cnn", "resnet18", "resnet20-cifar".
func Names() []string {
	files, _ := fs.Glob(FS, "*.yaml")
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(f, ".yaml")
	}
	return names
}

// Lookup finds a shipped config by the name a user types: "quickstart",
// "quickstart.yaml" or "configs/quickstart.yaml" (the path in the
// repository, so the README's commands work from any folder). It returns
// the embedded file's name and text. A path into any folder other than
// one named configs is not a shipped config's name.
func Lookup(name string) (file string, text []byte, ok bool) {
	clean := filepath.ToSlash(filepath.Clean(name))
	dir, base := "", clean
	if i := strings.LastIndexByte(clean, '/'); i >= 0 {
		dir, base = clean[:i], clean[i+1:]
	}
	if dir != "" && dir != "configs" && !strings.HasSuffix(dir, "/configs") {
		return "", nil, false
	}
	if !strings.HasSuffix(base, ".yaml") {
		if strings.Contains(base, ".") {
			return "", nil, false // quickstart.yml, quickstart.json: not ours
		}
		base += ".yaml"
	}
	b, err := FS.ReadFile(base)
	if err != nil {
		return "", nil, false
	}
	return base, b, true
}
