package config

import (
	"os"
	"strings"
	"testing"
)

// TestResumeListIsTheDocumentedOne: docs/config.md shows exactly the list
// of settings the code lets a resume change.
func TestResumeListIsTheDocumentedOne(t *testing.T) {
	doc, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- resume-changeable: begin -->\n", "<!-- resume-changeable: end -->"
	i, j := strings.Index(string(doc), begin), strings.Index(string(doc), end)
	if i < 0 || j < i {
		t.Fatalf("docs/config.md lacks the %q and %q markers", begin, end)
	}
	if got, want := string(doc[i+len(begin):j]), ResumeReference(); got != want {
		t.Errorf("docs/config.md lists the changeable settings as\n%s\nthe code has\n%s", got, want)
	}
	c := Default()
	paths := map[string]bool{}
	for _, f := range c.Fields() {
		paths[f.Path] = true
	}
	for _, p := range ResumeChangeableList() {
		if !paths[p] {
			t.Errorf("changeable setting %s is no setting", p)
		}
	}
}

func TestResumeMismatchesListsEveryOne(t *testing.T) {
	was, now := Default(), Default()
	now.Data.BatchSize = 8
	now.Optim.LR = 0.5
	now.Train.Seed = 9
	now.Train.Epochs = 99    // changeable
	now.Data.Workers = 7     // changeable
	now.Train.Out = "else/x" // changeable
	got := ResumeMismatches(was, now, "now")
	want := []string{
		"data.batch_size is 64 in the run but 8 now",
		"optim.lr is 0.05 in the run but 0.5 now",
		"train.seed is 1 in the run but 9 now",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("mismatches\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !ResumeChangeable("train.epochs") || ResumeChangeable("optim.lr") {
		t.Error("train.epochs must be changeable, optim.lr not")
	}
}
