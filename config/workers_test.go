package config

import (
	"flag"
	"io"
	"regexp"
	"strings"
	"testing"
)

// data.workers takes a count or auto, in a file and on the command line
// alike, and the resolved config writes auto back as auto.
func TestWorkersAutoOrCount(t *testing.T) {
	for text, want := range map[string]Workers{"auto": WorkersAuto, `"auto"`: WorkersAuto, "0": 0, "3": 3, `"2"`: 2, "2.0": 2, "1e1": 10} {
		c, err := Parse([]byte("data:\n  workers: "+text+"\n"), "test.yaml")
		if err != nil || c.Data.Workers != want {
			t.Errorf("workers: %s: got %v (%v), want %v", text, c.Data.Workers, err, want)
			continue
		}
		if err := c.Validate(); err != nil {
			t.Errorf("workers: %s: %v", text, err)
		}
		b, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(b, "resolved")
		if err != nil || back.Data.Workers != want {
			t.Errorf("workers: %s: written and read back as %v (%v)", text, back.Data.Workers, err)
		}
		if want.Auto() && !strings.Contains(string(b), "workers: auto\n") {
			t.Errorf("the resolved config does not say workers: auto:\n%s", b)
		}
	}
	for _, arg := range []string{"auto", "0", "4"} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		set := BindFlags(fs)
		if err := fs.Parse([]string{"--workers", arg}); err != nil {
			t.Fatalf("--workers %s: %v", arg, err)
		}
		c := Default()
		if err := c.Apply(*set); err != nil || c.Data.Workers.String() != arg {
			t.Errorf("--workers %s: got %v (%v)", arg, c.Data.Workers, err)
		}
	}
}

// A bad data.workers is refused naming the field and what it takes, from a
// file (with its line) and from a flag.
func TestWorkersBadValues(t *testing.T) {
	for _, bad := range []string{"-1", "many", "2.5", "[1, 2]", "{n: 2}", "Auto", ".inf", "1e30"} {
		_, err := Parse([]byte("data:\n  workers: "+bad+"\n"), "test.yaml")
		if err == nil || !strings.Contains(err.Error(), "test.yaml") || !strings.Contains(err.Error(), "line 2: data.workers") || !strings.Contains(err.Error(), "or auto") {
			t.Errorf("workers: %s: error %v, want one naming the file, line 2, data.workers and auto", bad, err)
		}
		if strings.Contains(bad, "[") || strings.Contains(bad, "{") {
			continue // not one flag value
		}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		BindFlags(fs)
		err = fs.Parse([]string{"--workers=" + bad})
		if err == nil || !strings.Contains(err.Error(), "data.workers") || !strings.Contains(err.Error(), "or auto") || regexp.MustCompile(`line \d`).MatchString(err.Error()) {
			t.Errorf("--workers %s: error %v, want one naming data.workers and auto", bad, err)
		}
	}
	c := Default()
	c.Data.Workers = -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "data.workers") {
		t.Errorf("Validate of workers -1: %v", err)
	}
}
