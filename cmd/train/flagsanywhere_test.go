package main

import (
	"bytes"
	"slices"
	"testing"
)

// TestFlagsAmongArguments: a subcommand that takes arguments (predict's
// files) reads its flags wherever they are among them, as `train predict
// --checkpoint R a.png --top 3` is typed; -- ends the flags, so that a file
// named like a flag can follow; a -- that is a flag's value is a value.
func TestFlagsAmongArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		top  int
		json bool
		out  string
		pos  []string
	}{
		{[]string{"a.png", "--top", "3"}, 3, false, "", []string{"a.png"}},
		{[]string{"--out", "R", "a.png", "--top", "3", "b.png", "--json", "c.png"}, 3, true, "R", []string{"a.png", "b.png", "c.png"}},
		{[]string{"a.png", "--", "--top", "-x.png"}, 5, false, "", []string{"a.png", "--top", "-x.png"}},
		{[]string{"--json", "--", "--top"}, 5, true, "", []string{"--top"}},
		{[]string{"--out", "--", "a.png", "--top=2"}, 2, false, "--", []string{"a.png"}},
		{[]string{"--out", "--json", "--", "--top"}, 5, false, "--json", []string{"--top"}},
		{[]string{"-", "a.png"}, 5, false, "", []string{"-", "a.png"}},
	} {
		var stderr bytes.Buffer
		c := newSubcommand("x", "usage\n", &stderr)
		c.takesArgs = true
		top := c.Int("top", 5, "")
		asJSON := c.Bool("json", false, "")
		out := c.String("out", "", "")
		if code, ok := c.parse(tc.args); !ok {
			t.Errorf("%q: exit %d: %s", tc.args, code, stderr.String())
			continue
		}
		if *top != tc.top || *asJSON != tc.json || *out != tc.out || !slices.Equal(c.Args(), tc.pos) || c.NArg() != len(tc.pos) {
			t.Errorf("%q: --top %d --json %v --out %q args %q; want %d %v %q %q", tc.args, *top, *asJSON, *out, c.Args(), tc.top, tc.json, tc.out, tc.pos)
		}
	}
	// Without takesArgs an argument is still refused, flags after it or not.
	var stderr bytes.Buffer
	c := newSubcommand("x", "usage\n", &stderr)
	c.Int("top", 5, "")
	if code, ok := c.parse([]string{"a.png", "--top", "3"}); ok || code != 2 {
		t.Errorf("a command that takes no arguments accepted one: exit %d ok %v", code, ok)
	}
}
