package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads a YAML config file over Default(). Keys the file leaves out keep
// their default; unknown keys and wrong types are errors naming the file,
// line and field.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return Parse(b, path)
}

// Parse reads YAML config text over Default(); name is used in errors.
func Parse(text []byte, name string) (Config, error) {
	cfg := Default()
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(text))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, nil // an empty file is all defaults
		}
		return Config{}, fmt.Errorf("config %s: %v", name, cleanYAMLError(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("config %s: holds more than one YAML document; keep one", name)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if err := checkKeys(root, reflect.TypeOf(cfg), ""); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", name, err)
	}
	if err := normalizeScalars(root, reflect.TypeOf(cfg), ""); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", name, err)
	}
	// Lists replace the default rather than merge into it.
	clearListsPresent(root, reflect.ValueOf(&cfg).Elem())
	if err := root.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("config %s: %v", name, typeErrors(err, root))
	}
	return cfg, nil
}

// typeErrors rewrites the YAML library's type errors ("line 2: cannot
// unmarshal !!str `fast` into float64") to name the setting and the type a
// user knows ("line 2: optim.lr: `fast` is not a number").
func typeErrors(err error, root *yaml.Node) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return cleanYAMLError(err)
	}
	paths := map[int]string{}
	linePaths(root, "", paths)
	var out []string
	for _, e := range te.Errors {
		var line int
		var value, goType string
		if n, _ := fmt.Sscanf(e, "line %d: cannot unmarshal %s %s into %s", &line, new(string), &value, &goType); n == 4 {
			want := map[string]string{"float64": "a number", "int": "a whole number", "uint64": "a whole number >= 0", "bool": "true or false", "string": "text"}[goType]
			if want == "" {
				want = "of the right type"
			}
			out = append(out, fmt.Sprintf("line %d: %s: %s is not %s", line, paths[line], value, want))
			continue
		}
		out = append(out, e)
	}
	return strings.Join(out, "; ")
}

// linePaths maps the line of each scalar value under n to its dotted path.
func linePaths(n *yaml.Node, prefix string, out map[int]string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			linePaths(n.Content[i+1], join(prefix, n.Content[i].Value), out)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			linePaths(c, fmt.Sprintf("%s[%d]", prefix, i), out)
		}
	default:
		if _, taken := out[n.Line]; !taken {
			out[n.Line] = prefix
		}
	}
}

// cleanYAMLError strips the library's prefix and Go type names, which mean
// nothing to a user.
func cleanYAMLError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: ")
	s = strings.ReplaceAll(s, "unmarshal errors:\n  ", "")
	return s
}

// checkKeys walks a YAML mapping against the struct type t and reports the
// first key that names no field, with the nearest valid key as a hint.
func checkKeys(n *yaml.Node, t reflect.Type, prefix string) error {
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && n.Kind == yaml.SequenceNode {
		for i, item := range n.Content {
			if err := checkKeys(item, t.Elem(), fmt.Sprintf("%s[%d]", prefix, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		where := prefix
		if where == "" {
			where = "the top level"
		}
		return fmt.Errorf("line %d: %s must be a mapping of keys to values", n.Line, where)
	}
	fields := map[string]reflect.StructField{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key := yamlKey(f)
		fields[key] = f
		names = append(names, key)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f, ok := fields[k.Value]
		if !ok {
			msg := fmt.Sprintf("line %d: unknown key %q", k.Line, join(prefix, k.Value))
			if near := Nearest(k.Value, names); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", join(prefix, near))
			}
			return errors.New(msg + "; `train --help` lists every key")
		}
		if seen[k.Value] {
			return fmt.Errorf("line %d: key %q appears twice", k.Line, join(prefix, k.Value))
		}
		seen[k.Value] = true
		if err := checkKeys(v, f.Type, join(prefix, k.Value)); err != nil {
			return err
		}
	}
	return nil
}

// clearListsPresent empties list fields the YAML sets, so that a file's list
// replaces the default list instead of overwriting its first elements.
func clearListsPresent(n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode || v.Kind() != reflect.Struct {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		for j := 0; j < v.NumField(); j++ {
			if yamlKey(v.Type().Field(j)) != n.Content[i].Value {
				continue
			}
			fv := v.Field(j)
			switch fv.Kind() {
			case reflect.Slice:
				fv.Set(reflect.Zero(fv.Type()))
			case reflect.Struct:
				clearListsPresent(n.Content[i+1], fv)
			}
		}
	}
}

func yamlKey(f reflect.StructField) string {
	tag := f.Tag.Get("yaml")
	if i := strings.IndexByte(tag, ','); i >= 0 {
		tag = tag[:i]
	}
	if tag == "" {
		return strings.ToLower(f.Name)
	}
	return tag
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// Nearest returns the candidate closest to s in edit distance, if it is
// close enough to be a plausible typo.
func Nearest(s string, candidates []string) string {
	best, bestD := "", len(s)/2+2
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Marshal writes the config as YAML, the form saved in every run folder.
func (c Config) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}
