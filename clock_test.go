package nslab_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clockRead says whether n reads the wall clock's time passed:
// time.Since, time.Until, a result's Elapsed (an engine's measured run
// time), or a variable of vars (one assigned from those).
func clockRead(n ast.Node, vars map[string]bool) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.Ident:
			if vars[x.Name] {
				found = true
			}
		case *ast.CallExpr:
			if timeCall(x) {
				found = true
			}
		case *ast.SelectorExpr:
			if x.Sel.Name == "Elapsed" {
				found = true
			}
		}
		return !found
	})
	return found
}

// failsTest says whether a block calls t.Error, t.Errorf, t.Fatal,
// t.Fatalf or t.Fail (on any receiver).
func failsTest(b *ast.BlockStmt) bool {
	found := false
	ast.Inspect(b, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Error") || ok && strings.HasPrefix(sel.Sel.Name, "Fatal") || ok && sel.Sel.Name == "Fail" {
				found = true
			}
		}
		return !found
	})
	return found
}

// earlyOnly says whether cond only says the clock read is under a bound
// (the code returned before the time it waits, which no machine's speed
// makes happen): clock < bound or bound > clock, nothing else.
func earlyOnly(cond ast.Expr, vars map[string]bool) bool {
	b, ok := cond.(*ast.BinaryExpr)
	if !ok {
		return false
	}
	switch b.Op {
	case token.LSS, token.LEQ:
		return isDuration(b.X, vars) && !clockRead(b.Y, vars)
	case token.GTR, token.GEQ:
		return isDuration(b.Y, vars) && !clockRead(b.X, vars)
	case token.LOR, token.LAND:
		return earlyOnly(b.X, vars) && !clockRead(b.Y, vars) || earlyOnly(b.Y, vars) && !clockRead(b.X, vars)
	}
	return false
}

// isDuration says whether e is a clock read itself (time.Since(x),
// res.Elapsed, a variable of vars), not a figure made of one (a rate
// over it, which a slower machine lowers).
func isDuration(e ast.Expr, vars map[string]bool) bool {
	switch x := e.(type) {
	case *ast.ParenExpr:
		return isDuration(x.X, vars)
	case *ast.Ident:
		return vars[x.Name]
	case *ast.SelectorExpr:
		return x.Sel.Name == "Elapsed"
	case *ast.CallExpr:
		return timeCall(x)
	}
	return false
}

// timeCall says whether c is time.Since(...) or time.Until(...).
func timeCall(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "time" && (sel.Sel.Name == "Since" || sel.Sel.Name == "Until")
}

// clockVars are the variables fn assigns from the clock (late :=
// time.Since(deadline)).
func clockVars(fn *ast.FuncDecl) map[string]bool {
	vars := map[string]bool{}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
			for i, r := range as.Rhs {
				if id, ok := as.Lhs[i].(*ast.Ident); ok && clockRead(r, vars) {
					vars[id.Name] = true
				}
			}
		}
		return true
	})
	return vars
}

// TestNoWallClockAssertion: no test fails on the wall clock's time passed
// (time.Since, time.Until, an engine's Elapsed) or a rate over it, where a
// slower or stalled machine would fail it by chance; speed is measured by
// benchmarks. A test may fail when the code returned before the time it
// waits (clock < bound, which no machine's speed causes), and a wait may
// give up after a bound marked "// timeout:" with why it cannot be met by
// a working system on a slow machine. A figure that only looks like the
// clock (a parsed or a fake's Elapsed) is marked "// not the clock:", and
// a figure over the clock that a slower machine moves on both sides of the
// comparison alike is marked "// premise:", saying why.
func TestNoWallClockAssertion(t *testing.T) {
	found, err := wallClockAssertions(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: a test fails on the wall clock's time passed (a slower machine fails it by chance): assert what the code did, not how long it took", f)
	}
}

// TestWallClockCheckFinds: the check finds an upper bound on time.Since,
// on a variable assigned from it and on a rate over an Elapsed, and passes
// a lower bound, a marked timeout and a bound that fails nothing.
func TestWallClockCheckFinds(t *testing.T) {
	dir := t.TempDir()
	src := `package x

import ("testing"; "time")

func TestX(t *testing.T) {
	start := time.Now()
	if time.Since(start) > time.Second { // 7: found
		t.Error("slow")
	}
	late := time.Since(start)
	if late > time.Second { // 11: found
		t.Fatal("late")
	}
	var res struct{ Sent int; Elapsed time.Duration }
	if float64(res.Sent)/res.Elapsed.Seconds() < 100 { // 15: found
		t.Errorf("rate")
	}
	if time.Since(start) < time.Millisecond { // returned early: passed
		t.Error("early")
	}
	if time.Since(start) > time.Minute { // timeout: a stuck system
		t.Error("stuck")
	}
	for time.Since(start) < time.Second {
		if time.Since(start) > time.Hour { break }
	}
}
`
	if err := os.WriteFile(filepath.Join(dir, "x_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	found, err := wallClockAssertions(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range found {
		lines = append(lines, f[strings.LastIndex(f, ":")+1:])
	}
	if strings.Join(lines, ",") != "7,11,15" {
		t.Errorf("found %q, want lines 7, 11 and 15", found)
	}
}

// wallClockAssertions are the places (file:line) under root where a test
// fails on the wall clock (see TestNoWallClockAssertion).
func wallClockAssertions(root string) ([]string, error) {
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		marked := map[int]bool{} // lines a comment marks: "timeout:", "not the clock:", "premise:"
		for _, cg := range f.Comments {
			text := cg.Text()
			if strings.Contains(text, "timeout:") || strings.Contains(text, "not the clock:") || strings.Contains(text, "premise:") {
				for l := fset.Position(cg.Pos()).Line; l <= fset.Position(cg.End()).Line+1; l++ {
					marked[l] = true
				}
			}
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || strings.HasPrefix(fn.Name.Name, "Benchmark") {
				continue
			}
			vars := clockVars(fn)
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				is, ok := n.(*ast.IfStmt)
				if !ok || !failsTest(is.Body) {
					return true
				}
				line := fset.Position(is.Pos()).Line
				uses := clockRead(is.Cond, vars) || is.Init != nil && clockRead(is.Init, vars)
				if uses && !earlyOnly(is.Cond, vars) && !marked[line] {
					found = append(found, fmt.Sprintf("%s:%d", path, line))
				}
				return true
			})
		}
		return nil
	})
	return found, err
}
