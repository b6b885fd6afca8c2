package config

import (
	"flag"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Field is one leaf setting of Config.
type Field struct {
	Path  string // dotted YAML path, also the long flag name: "data.batch_size"
	Short string // short flag name, if any: "batch-size"
	Help  string
	Type  string // what the flag takes, for help text
	value reflect.Value
}

// Fields lists the leaf settings of c, in declaration order, bound to c so
// that Set changes c.
func (c *Config) Fields() []Field {
	var out []Field
	walkFields(reflect.ValueOf(c).Elem(), "", &out)
	return out
}

func walkFields(v reflect.Value, prefix string, out *[]Field) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		fv := v.Field(i)
		path := join(prefix, yamlKey(sf))
		if sf.Type.Kind() == reflect.Struct {
			walkFields(fv, path, out)
			continue
		}
		*out = append(*out, Field{
			Path: path, Short: sf.Tag.Get("flag"), Help: sf.Tag.Get("help"),
			Type: typeName(sf.Type), value: fv,
		})
	}
}

func typeName(t reflect.Type) string {
	if ft, ok := reflect.Zero(t).Interface().(interface{ FlagType() string }); ok {
		return ft.FlagType()
	}
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return "yaml"
		}
		return "list"
	case reflect.Uint64, reflect.Int:
		return "int"
	case reflect.Float64:
		return "float"
	}
	return t.Kind().String()
}

// Set parses s into the field: numbers and booleans as YAML scalars, lists
// as "a,b" or YAML flow ("[a, b]"), conv blocks as YAML flow
// ("[{channels: 16, kernel: 3, pool: true}]").
func (f Field) Set(s string) error {
	ptr := reflect.New(f.value.Type())
	switch {
	case f.value.Kind() == reflect.String:
		ptr.Elem().SetString(s)
	default:
		text := s
		if f.value.Kind() == reflect.Slice && !strings.HasPrefix(strings.TrimSpace(s), "[") {
			text = "[" + s + "]"
		}
		var node yaml.Node
		if err := yaml.Unmarshal([]byte(text), &node); err != nil {
			return fmt.Errorf("%q is not a valid %s for %s", s, f.Type, f.Path)
		}
		if len(node.Content) == 1 {
			if err := checkKeys(node.Content[0], f.value.Type(), f.Path); err != nil {
				return fmt.Errorf("%q for %s: %v (in YAML flow, put a space after each colon: {channels: 16, kernel: 3})", s, f.Path, strings.TrimSuffix(err.Error(), "; `train --help` lists every key"))
			}
			zeroLines(node.Content[0]) // a flag has no lines to name
			if err := normalizeScalars(node.Content[0], f.value.Type(), f.Path); err != nil {
				return err
			}
		}
		if err := node.Decode(ptr.Interface()); err != nil {
			if _, own := ptr.Interface().(yaml.Unmarshaler); own {
				return err // the type's own message (Workers)
			}
			return fmt.Errorf("%q is not a valid %s for %s", s, f.Type, f.Path)
		}
	}
	f.value.Set(ptr.Elem())
	return nil
}

// String shows the field's current value as it would be written in YAML,
// on one line ("[0.08, 1]", "[{channels: 16, kernel: 3, pool: true}]").
func (f Field) String() string {
	if !f.value.IsValid() {
		return ""
	}
	var n yaml.Node
	if err := n.Encode(f.value.Interface()); err != nil {
		return "?"
	}
	flow(&n)
	b, err := yaml.Marshal(&n)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

func zeroLines(n *yaml.Node) {
	n.Line = 0
	for _, c := range n.Content {
		zeroLines(c)
	}
}

func flow(n *yaml.Node) {
	n.Style |= yaml.FlowStyle
	for _, c := range n.Content {
		flow(c)
	}
}

// Override is one setting from the command line, applied after the file.
type Override struct{ Path, Value string }

// flagValue adapts a Field to flag.Value. It checks the value at once (so a
// typo fails while flags are parsed) and records it, to be applied over the
// config file once that has been read.
type flagValue struct {
	f   Field
	set *[]Override
}

func (v flagValue) String() string { return v.f.String() }
func (v flagValue) Set(s string) error {
	if err := v.f.Set(s); err != nil {
		return err
	}
	*v.set = append(*v.set, Override{v.f.Path, s})
	return nil
}
func (v flagValue) IsBoolFlag() bool { return v.f.value.IsValid() && v.f.value.Kind() == reflect.Bool }

// BindFlags defines a flag for every setting on fs: the long form
// --section.key for all, and the short form (--batch-size) where one is
// declared. After fs.Parse, the returned slice holds what the command line
// set, in order, for Apply.
func BindFlags(fs *flag.FlagSet) *[]Override {
	set := new([]Override)
	scratch := Default()
	for _, f := range scratch.Fields() {
		v := flagValue{f, set}
		fs.Var(v, f.Path, f.Help)
		if f.Short != "" {
			fs.Var(v, f.Short, "same as --"+f.Path)
		}
	}
	return set
}

// Apply sets each override on c, in order.
func (c *Config) Apply(overrides []Override) error {
	fields := map[string]Field{}
	for _, f := range c.Fields() {
		fields[f.Path] = f
	}
	for _, o := range overrides {
		f, ok := fields[o.Path]
		if !ok {
			return fmt.Errorf("no setting %q", o.Path)
		}
		if err := f.Set(o.Value); err != nil {
			return err
		}
	}
	return nil
}
