package main

import (
	"bytes"
	"strings"
	"testing"
)

// train eval and train predict parse their flags with the bench commands'
// helper: -h exits 0, a bad or missing flag or a stray argument exits 2
// with one line naming it, before any checkpoint is read.
func TestEvalPredictFlags(t *testing.T) {
	for _, tc := range []struct {
		cmd  func([]string, *bytes.Buffer, *bytes.Buffer) int
		name string
		args []string
		code int
		want string
	}{
		{evalFlags, "eval", []string{"-h"}, 0, "Usage: train eval"},
		{evalFlags, "eval", nil, 2, "train eval: --checkpoint is required"},
		{evalFlags, "eval", []string{"--chekpoint", "runs/x"}, 2, "unknown flag --chekpoint (did you mean --checkpoint?)"},
		{evalFlags, "eval", []string{"--checkpoint", "runs/x", "extra"}, 2, `unexpected argument "extra"`},
		{predictFlags, "predict", []string{"-h"}, 0, "Usage: train predict"},
		{predictFlags, "predict", []string{"--checkpoint", "runs/x"}, 2, "at least one image file"},
		{predictFlags, "predict", []string{"--checkpoint", "runs/x", "--top", "0", "a.jpg"}, 2, "--top 0: want at least 1"},
		{predictFlags, "predict", []string{"--top", "x"}, 2, `--top "x"`},
	} {
		var out, errb bytes.Buffer
		code := tc.cmd(tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("train %s %q: exit %d, stderr %q; want exit %d and %q", tc.name, tc.args, code, errb.String(), tc.code, tc.want)
		}
	}
}

func evalFlags(args []string, out, errb *bytes.Buffer) int    { return evalCmd(args, out, errb) }
func predictFlags(args []string, out, errb *bytes.Buffer) int { return predictCmd(args, out, errb) }
