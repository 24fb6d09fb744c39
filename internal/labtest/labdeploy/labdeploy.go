// Package labdeploy deploys the examples for privileged tests of packages
// that use labs (the lab package's own tests cannot import it). Only tests
// import it.
package labdeploy

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// Example deploys examples/<file> under a random lab name and namespace
// prefix (starting with letter), with a private state directory, and
// destroys it when the test ends. It skips the test when not root.
func Example(t *testing.T, file, letter string) *spec.Lab {
	t.Helper()
	labtest.SkipUnlessRoot(t)
	data, err := os.ReadFile(filepath.Join(examplesDir(), file))
	if err != nil {
		t.Fatal(err)
	}
	name := labtest.Name(letter)
	return Deploy(t, labtest.Rename(data, name))
}

// Deploy deploys a lab file's contents and destroys the lab when the test
// ends.
func Deploy(t *testing.T, src []byte) *spec.Lab {
	t.Helper()
	labtest.SkipUnlessRoot(t)
	l, err := spec.Parse("test.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	m := &lab.Manager{StateDir: t.TempDir()}
	if _, err := m.Deploy(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := m.Destroy(l.Name); err != nil {
			t.Errorf("destroy lab %s: %v", l.Name, err)
		}
	})
	return l
}

// examplesDir finds examples/ upwards from the test's working directory
// (a package directory of the tree, also inside the VM), or else beside
// this source file.
func examplesDir() string {
	if dir, err := os.Getwd(); err == nil {
		for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
			if st, err := os.Stat(filepath.Join(dir, "examples")); err == nil && st.IsDir() {
				return filepath.Join(dir, "examples")
			}
		}
	}
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "../../../examples")
}

// Open opens a deployed lab's nodes (see lab.Manager.Open); they are
// closed when the test ends.
func Open(t testing.TB, l *spec.Lab) *lab.Running {
	t.Helper()
	r, err := (&lab.Manager{}).Open(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}
