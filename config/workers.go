package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Workers is data.workers: a number of loader goroutines (0 = load inline),
// or WorkersAuto, written "auto" in YAML and on the command line
// (--workers auto): the loader measures its first steps and picks the count
// itself (data/autoworkers.go). It is an int so that code and tests set a
// count as they always did (c.Data.Workers = 2).
type Workers int

// WorkersAuto is data.workers: auto. Its value is no count: test Auto
// before using a Workers as one.
const WorkersAuto Workers = math.MinInt32

// workersChoices is what data.workers takes, for messages.
const workersChoices = "a whole number >= 0 (0 = load inline) or auto (measure the first steps and pick)"

// Auto reports whether w is WorkersAuto.
func (w Workers) Auto() bool { return w == WorkersAuto }

// String is "auto" or the count.
func (w Workers) String() string {
	if w.Auto() {
		return "auto"
	}
	return strconv.Itoa(int(w))
}

// FlagType is what --data.workers takes, for the help text.
func (Workers) FlagType() string { return "int or auto" }

// MarshalYAML writes auto as auto, a count as a number.
func (w Workers) MarshalYAML() (any, error) {
	if w.Auto() {
		return "auto", nil
	}
	return int(w), nil
}

// UnmarshalYAML reads a whole number >= 0 (quoted or not, 2.0 and 1e1 too,
// as every whole-number setting does: numbers.go) or auto; anything else is
// an error naming data.workers and its choices.
func (w *Workers) UnmarshalYAML(n *yaml.Node) error {
	where := "data.workers"
	if n.Line > 0 {
		where = fmt.Sprintf("line %d: %s", n.Line, where)
	}
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%s must be %s, not a list or mapping", where, workersChoices)
	}
	s := strings.TrimSpace(n.Value)
	if s == "auto" {
		*w = WorkersAuto
		return nil
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	switch {
	case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%s: %q is not a worker count: want %s", where, s, workersChoices)
	case v != math.Trunc(v):
		return fmt.Errorf("%s: %s is not a whole number (it would not be rounded): want %s", where, s, workersChoices)
	case v < 0:
		return fmt.Errorf("%s: %s is negative: want %s", where, s, workersChoices)
	case v >= math.MaxInt64: // a count too large for memory is the memory check's (cmd/train/limits.go)
		return fmt.Errorf("%s: %s is out of range: want %s", where, s, workersChoices)
	}
	*w = Workers(v)
	return nil
}
