package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestHelpListsEveryCommandAndConfig: `train --help` names every subcommand
// and every config shipped in configs/, each read from where it is defined
// rather than from a list kept beside them: the subcommands are the
// functions of this package with a command's signature (func(args
// []string, stdout, stderr io.Writer) int), the configs the YAML files of
// the configs folder on disk. The package comment lists the commands too.
func TestHelpListsEveryCommandAndConfig(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb); code != 0 {
		t.Fatalf("train --help: exit %d: %s", code, errb.String())
	}
	help := out.String()

	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	entry := map[string]string{} // function name -> command name in the table
	for _, c := range commands {
		entry[funcName(c.run)] = c.name
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if file.Doc != nil {
			doc += file.Doc.Text()
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !isCommandFunc(fn.Type) || fn.Name.Name == "run" || fn.Name.Name == "trainCmd" {
				continue
			}
			if _, ok := entry[fn.Name.Name]; !ok {
				t.Errorf("%s: func %s has a subcommand's signature but is not in the commands table (main.go)", f, fn.Name.Name)
			}
		}
	}
	for _, c := range commands {
		if c.hidden {
			continue
		}
		if !strings.Contains(help, "  train "+c.name+" ") {
			t.Errorf("train --help does not list `train %s`", c.name)
		}
		if !strings.Contains(doc, "train "+c.name+" ") {
			t.Errorf("the package comment (main.go) does not list `train %s`", c.name)
		}
	}

	yamls, err := filepath.Glob(filepath.Join("..", "..", "configs", "*.yaml"))
	if err != nil || len(yamls) < 2 {
		t.Fatalf("configs/*.yaml: %v %v", yamls, err)
	}
	i := strings.Index(help, "--config FILE\n")
	if i < 0 {
		t.Fatalf("train --help explains no --config:\n%s", help)
	}
	configHelp := help[i:]
	configHelp = configHelp[:strings.Index(configHelp, "\n  --")] // up to the next setting
	for _, y := range yamls {
		name := strings.TrimSuffix(filepath.Base(y), ".yaml")
		if !strings.Contains(configHelp, " "+name+",") && !strings.Contains(configHelp, " "+name+".") {
			t.Errorf("train --help's --config does not name the shipped config %s:\n%s", name, configHelp)
		}
	}
}

// isCommandFunc reports whether t is func(args []string, stdout, stderr io.Writer) int.
func isCommandFunc(t *ast.FuncType) bool {
	var params []string
	for _, p := range t.Params.List {
		for range max(1, len(p.Names)) {
			params = append(params, types(p.Type))
		}
	}
	if t.Results == nil || len(t.Results.List) != 1 || types(t.Results.List[0].Type) != "int" {
		return false
	}
	return strings.Join(params, ",") == "[]string,io.Writer,io.Writer"
}

func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.ArrayType:
		return "[]" + types(e.Elt)
	case *ast.SelectorExpr:
		return types(e.X) + "." + e.Sel.Name
	}
	return "?"
}

// funcName is the name of the package-level function f ("genData").
func funcName(f any) string {
	name := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
	return name[strings.LastIndexByte(name, '.')+1:]
}
