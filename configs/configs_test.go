package configs

import (
	"flag"
	"io/fs"
	"os"
	"strings"
	"testing"

	"stoke/config"
)

var update = flag.Bool("update", false, "rewrite docs/config.md")

// TestShippedConfigsAreValid parses and validates every shipped config.
func TestShippedConfigsAreValid(t *testing.T) {
	names, _ := fs.Glob(FS, "*.yaml")
	if len(names) == 0 {
		t.Fatal("no configs embedded")
	}
	for _, name := range names {
		b, _ := FS.ReadFile(name)
		c, err := config.Parse(b, name)
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestConfigReferenceIsCurrent keeps the table in docs/config.md in step
// with the settings; run `go test ./configs -update` after changing them.
func TestConfigReferenceIsCurrent(t *testing.T) {
	b, _ := FS.ReadFile(Default)
	qs, err := config.Parse(b, Default)
	if err != nil {
		t.Fatal(err)
	}
	table := config.Reference(qs)
	const path = "../docs/config.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- settings: begin -->\n", "<!-- settings: end -->"
	i, j := strings.Index(string(doc), begin), strings.Index(string(doc), end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the %q and %q markers", path, begin, end)
	}
	want := string(doc[:i+len(begin)]) + table + string(doc[j:])
	if want == string(doc) {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date with the settings: run `go test ./configs -update`", path)
}
