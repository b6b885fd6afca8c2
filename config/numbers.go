package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The rule for numbers and switches, the same in a file and on the command
// line: a setting's value is read from its text. A quoted scalar in YAML
// ("3", '0.1', "true") reads as the same text unquoted, as `--epochs 3` does
// (a flag's value is always text); a whole-number setting takes a number
// with no fractional part (3, 3.0 and 1e9 are whole; 2.5 is refused, never
// truncated, as the YAML library would do).

// normalizeScalars walks n against the type t (as checkKeys does) and, for
// every scalar bound to a number or a bool, drops quotes so the value is
// resolved from its text, and refuses a fractional or out-of-range value for
// a whole-number setting.
func normalizeScalars(n *yaml.Node, t reflect.Type, path string) error {
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // reads its own text, and says what it takes (Workers)
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil // checkKeys reports a non-mapping
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			for j := 0; j < t.NumField(); j++ {
				f := t.Field(j)
				if yamlKey(f) == n.Content[i].Value {
					if err := normalizeScalars(n.Content[i+1], f.Type, join(path, yamlKey(f))); err != nil {
						return err
					}
				}
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, c := range n.Content {
			if err := normalizeScalars(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Int, reflect.Uint64, reflect.Float64, reflect.Bool:
		if n.Kind != yaml.ScalarNode {
			return nil
		}
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			n.Style, n.Tag = 0, "" // resolve from the text, as a flag's value is
			n.Value = strings.TrimSpace(n.Value)
		}
		if t.Kind() == reflect.Int || t.Kind() == reflect.Uint64 {
			return wholeNumber(n, t, path)
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// wholeNumber refuses a scalar that YAML reads as a float (2.5, 1e9) unless
// it is a whole number the setting's type holds.
func wholeNumber(n *yaml.Node, t reflect.Type, path string) error {
	if n.ShortTag() != "!!float" {
		return nil // an integer, or text that decoding refuses with its own message
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil {
		return nil // .inf, .nan: decoding refuses them
	}
	lo, hi := float64(math.MinInt64), float64(math.MaxInt64)
	if t.Kind() == reflect.Uint64 {
		lo, hi = 0, float64(math.MaxUint64)
	}
	where := path
	if n.Line > 0 {
		where = fmt.Sprintf("line %d: %s", n.Line, path)
	}
	if v != math.Trunc(v) {
		return fmt.Errorf("%s: %s is not a whole number (this setting counts whole things; it would not be rounded)", where, n.Value)
	}
	if v < lo || v >= hi {
		return fmt.Errorf("%s: %s is out of range for a whole number", where, n.Value)
	}
	return nil
}
