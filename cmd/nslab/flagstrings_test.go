package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestLibrariesNameNoFlag: no string of the libraries (topology/ and
// pktgen/, tests aside) names one of nslab's flags as --FLAG. A library
// names a request's field (bench.FieldError) or returns the remedy as
// data (LabToDestroy); this command says which flag or command that is.
// Other programs' flags in the shell lines a plan prints (nsenter --net,
// mount --bind) are not nslab's and are not looked for.
func TestLibrariesNameNoFlag(t *testing.T) {
	flags := map[string]bool{}
	var collect func([]*cli.Command)
	collect = func(cmds []*cli.Command) {
		for _, c := range cmds {
			for _, f := range c.Flags {
				for _, n := range f.Names() {
					if len(n) > 1 {
						flags[n] = true
					}
				}
			}
			collect(c.Subcommands)
		}
	}
	app := newApp(commands()...)
	collect(app.Commands)
	for _, f := range app.Flags {
		for _, n := range f.Names() {
			flags[n] = true
		}
	}
	if !flags["rate"] || !flags["state-dir"] {
		t.Fatalf("the app's flags were not found (%d names)", len(flags))
	}
	// Other programs' options that nslab's scripts run with, which share
	// a name with one of nslab's flags.
	for _, other := range []string{"all"} { // nproc --all
		delete(flags, other)
	}
	word := regexp.MustCompile(`(^|[^\w-])--([a-z][a-z0-9-]*)`)
	fset := token.NewFileSet()
	found := 0
	for _, root := range []string{"../../topology", "../../pktgen"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			found++
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				for _, m := range word.FindAllStringSubmatch(s, -1) {
					if flags[m[2]] {
						t.Errorf("%s: a library string names nslab's flag --%s: %.80q", fset.Position(lit.Pos()), m[2], s)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found < 100 {
		t.Fatalf("read only %d library files", found)
	}
}
