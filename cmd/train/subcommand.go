package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"stoke/config"
)

// subcommand is the flag set of one `train NAME`, shared by the bench
// subcommands: -h prints the usage line and every flag on stderr (exit 0);
// a bad flag, a bad value or an argument where none is taken is one line
// on stderr naming the flag (exit 2); later failures are reported by fail
// as "train NAME: ...".
type subcommand struct {
	*flag.FlagSet
	name      string
	usage     string
	stderr    io.Writer
	takesArgs bool // positional arguments allowed, flags among them; -- ends the flags
	lists     []listFlag
	args      []string // the positional arguments, once parsed
}

// listFlag is a flag of comma-separated numbers: a string flag to the flag
// package (so -h shows it as one), parsed by parse.
type listFlag struct {
	name string
	text *string
	set  func(string) error
}

// newSubcommand starts the flags of `train name`; usage is the text -h
// prints above the flags.
func newSubcommand(name, usage string, stderr io.Writer) *subcommand {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by parse, naming the flag
	fs.Usage = func() {}
	return &subcommand{FlagSet: fs, name: name, usage: usage, stderr: stderr}
}

// parse parses args. When the command should stop there it returns false
// and the exit status: 0 after -h, 2 after an error, which it has printed.
func (c *subcommand) parse(args []string) (code int, ok bool) {
	err := c.parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(c.stderr, c.usage)
		c.SetOutput(c.stderr)
		c.PrintDefaults()
		c.SetOutput(io.Discard)
		return 0, false
	}
	var msg string
	if err != nil {
		msg = c.flagError(err)
	} else if c.NArg() > 0 && !c.takesArgs {
		msg = fmt.Sprintf("unexpected argument %q: this command takes flags only", c.Arg(0))
	}
	for _, l := range c.lists {
		if err := l.set(*l.text); err != nil && msg == "" {
			msg = fmt.Sprintf("--%s %q: %v", l.name, *l.text, err)
		}
	}
	if msg != "" {
		fmt.Fprintf(c.stderr, "train %s: %s; `train %s -h` lists its flags\n", c.name, msg, c.name)
		return 2, false
	}
	return 0, true
}

// parseArgs parses the flags of args into c and keeps the rest as its
// positional arguments. With takesArgs, flags may come anywhere among them
// (`train predict a.png --top 3 b.png`), as in PyTorch's argparse scripts;
// a -- ends the flags, so that a file named -x can be given after it.
// The flag package alone stops at the first argument that is not a flag.
func (c *subcommand) parseArgs(args []string) error {
	c.args = nil
	for {
		if err := c.Parse(args); err != nil {
			return err
		}
		rest := c.FlagSet.Args()
		if len(rest) == 0 {
			return nil
		}
		if !c.takesArgs || c.endedAtDashes(args[:len(args)-len(rest)]) {
			c.args = append(c.args, rest...)
			return nil
		}
		c.args = append(c.args, rest[0])
		args = rest[1:]
	}
}

// endedAtDashes reports whether the flags parsed from done ended at a --
// (which the flag package consumes) rather than at a positional argument:
// done is walked as the flag package walks it, so that a -- given as a
// flag's value (--out --) is not taken for the end of the flags.
func (c *subcommand) endedAtDashes(done []string) bool {
	for i := 0; i < len(done); i++ {
		a := done[i]
		if a == "--" {
			return i == len(done)-1
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := c.Lookup(name); f != nil {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
				i++ // its value
			}
		}
	}
	return false
}

// Args is the positional arguments, flags taken out.
func (c *subcommand) Args() []string { return c.args }

// NArg is len(Args()).
func (c *subcommand) NArg() int { return len(c.args) }

// Arg is Args()[i], or "" past the end.
func (c *subcommand) Arg(i int) string {
	if i < 0 || i >= len(c.args) {
		return ""
	}
	return c.args[i]
}

// flagError rewrites the flag package's messages to name the flag as it is
// written on the command line (--name), with the nearest one for a
// misspelt name.
func (c *subcommand) flagError(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = fmt.Sprintf("unknown flag --%s", name)
		var names []string
		c.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if near := config.Nearest(name, names); near != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", near)
		}
		return msg
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Sprintf("--%s needs a value", name)
	}
	// invalid value "V" for flag -NAME: WHY
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.Index(rest, " for flag -"); i >= 0 {
			value, rest := rest[:i], rest[i+len(" for flag -"):]
			if j := strings.Index(rest, ": "); j >= 0 {
				return fmt.Sprintf("--%s %s: %s", rest[:j], value, rest[j+2:])
			}
		}
	}
	return msg
}

// fail reports a failure after the flags were parsed and returns code.
func (c *subcommand) fail(code int, format string, a ...any) int {
	fmt.Fprintf(c.stderr, "train "+c.name+": "+format+"\n", a...)
	return code
}

// badValue reports a flag whose value parsed but is out of range, naming
// the flag and what it wants, and returns 2.
func (c *subcommand) badValue(name string, value any, want string) int {
	return c.fail(2, "--%s %v: want %s", name, value, want)
}

// intList defines a flag of comma-separated whole numbers, each at least
// least; an empty value is nil (the command's default).
func (c *subcommand) intList(name, value, usage string, least int) *[]int {
	l := &numList[int]{parse: strconv.Atoi, least: least, want: fmt.Sprintf("a whole number >= %d", least)}
	c.lists = append(c.lists, listFlag{name: name, text: c.String(name, value, usage), set: l.set})
	return &l.v
}

// positiveFloatList defines a flag of comma-separated numbers above 0.
func (c *subcommand) positiveFloatList(name, value, usage string) *[]float64 {
	l := &numList[float64]{parse: func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }, above: true, want: "a number above 0"}
	c.lists = append(c.lists, listFlag{name: name, text: c.String(name, value, usage), set: l.set})
	return &l.v
}

// numList is comma-separated numbers, each checked, so that the error
// names the number.
type numList[T int | float64] struct {
	v     []T
	parse func(string) (T, error)
	least T
	above bool // > least rather than >=
	want  string
}

func (l *numList[T]) set(s string) error {
	l.v = nil
	if strings.TrimSpace(s) == "" {
		return nil
	}
	for _, f := range strings.Split(s, ",") {
		x, err := l.parse(strings.TrimSpace(f))
		if err != nil || x < l.least || (l.above && x == l.least) {
			return fmt.Errorf("%q is not %s", strings.TrimSpace(f), l.want)
		}
		l.v = append(l.v, x)
	}
	return nil
}
