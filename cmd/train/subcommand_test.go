package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestSubcommandFlags: -h prints the usage and every flag (exit 0); each
// kind of bad command line is one line naming the flag (exit 2); lists are
// parsed and checked.
func TestSubcommandFlags(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		takesArgs bool
		code      int
		ok        bool
		want      []string // in stderr
		ints      []int
		floats    []float64
	}{
		{args: nil, code: 0, ok: true, floats: []float64{25, 0.02}},
		{args: []string{"--ints", "0, 3,1", "--floats", "0.5"}, code: 0, ok: true, ints: []int{0, 3, 1}, floats: []float64{0.5}},
		{args: []string{"-h"}, code: 0, want: []string{"usage: train x [flags]\n", "-ints string", "whole numbers", `(default "25,0.02")`, "-steps int"}},
		{args: []string{"--help"}, code: 0, want: []string{"usage: train x", "-floats string"}},
		{args: []string{"--stpes", "3"}, code: 2, want: []string{"train x: unknown flag --stpes (did you mean --steps?); `train x -h` lists its flags\n"}},
		{args: []string{"--steps"}, code: 2, want: []string{"train x: --steps needs a value"}},
		{args: []string{"--steps", "many"}, code: 2, want: []string{`train x: --steps "many": parse error`}},
		{args: []string{"--ints", "1,x"}, code: 2, want: []string{`train x: --ints "1,x": "x" is not a whole number >= 0`}},
		{args: []string{"--ints", "-1"}, code: 2, want: []string{`--ints "-1": "-1" is not a whole number >= 0`}},
		{args: []string{"--floats", "1,0"}, code: 2, want: []string{`--floats "1,0": "0" is not a number above 0`}},
		{args: []string{"--steps", "2", "extra"}, code: 2, want: []string{`train x: unexpected argument "extra": this command takes flags only`}},
		{args: []string{"--steps", "2", "--", "--epochs", "1"}, takesArgs: true, code: 0, ok: true, floats: []float64{25, 0.02}},
	} {
		var stderr bytes.Buffer
		c := newSubcommand("x", "usage: train x [flags]\n", &stderr)
		c.takesArgs = tc.takesArgs
		ints := c.intList("ints", "", "comma-separated whole numbers", 0)
		floats := c.positiveFloatList("floats", "25,0.02", "comma-separated sizes")
		c.Int("steps", 1, "steps")
		code, ok := c.parse(tc.args)
		if code != tc.code || ok != tc.ok {
			t.Errorf("%q: code %d ok %v, want %d %v; stderr:\n%s", tc.args, code, ok, tc.code, tc.ok, stderr.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%q: stderr lacks %q:\n%s", tc.args, w, stderr.String())
			}
		}
		if tc.code == 2 && strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%q: want one line on stderr, got:\n%s", tc.args, stderr.String())
		}
		if tc.ok && (!slices.Equal(*ints, tc.ints) || !slices.Equal(*floats, tc.floats)) {
			t.Errorf("%q: lists %v %v, want %v %v", tc.args, *ints, *floats, tc.ints, tc.floats)
		}
		if tc.ok && tc.takesArgs && !slices.Equal(c.Args(), []string{"--epochs", "1"}) {
			t.Errorf("%q: args %q", tc.args, c.Args())
		}
	}
}

// TestBenchSubcommandsRefuseBadValues: the bench subcommands check their
// numbers before doing anything, and say which flag is wrong.
func TestBenchSubcommandsRefuseBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench-step", "--steps", "0"}, "train bench-step: --steps 0: want at least 1"},
		{[]string{"bench-step", "--warmup", "-1"}, "train bench-step: --warmup -1: want 0 or more"},
		{[]string{"bench-step", "--threads", "2,0"}, `train bench-step: --threads "2,0": "0" is not a whole number >= 1`},
		{[]string{"bench-data", "--workers", "1,two"}, `train bench-data: --workers "1,two": "two" is not a whole number >= 0`},
		{[]string{"bench-data", "--images", "0"}, "train bench-data: --images 0: want at least 1"},
		{[]string{"bench-dist", "--ranks", ""}, `train bench-dist: --ranks "": want one rank count or more`},
		{[]string{"bench-dist", "--bucket-mb", "25,-1"}, `train bench-dist: --bucket-mb "25,-1": "-1" is not a number above 0`},
		{[]string{"bench-dist", "--epochs", "0"}, "train bench-dist: --epochs 0: want at least 1"},
		{[]string{"bench", "--rounds=x"}, `train bench: --rounds "x": parse error`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s", tc.args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), tc.want) || stdout.Len() > 0 {
			t.Errorf("%q: stderr %q, want it to hold %q (and stdout empty: %q)", tc.args, stderr.String(), tc.want, stdout.String())
		}
	}
}
