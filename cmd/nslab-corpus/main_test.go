package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
)

// TestPrivilegedVendoredKatharaLabs runs the Kathara labs vendored under
// examples/imported as make corpus-kathara runs a checkout of Kathara's:
// each imports, validates, deploys, converges (check with 0 broken) and
// destroys clean, and the table says so.
func TestPrivilegedVendoredKatharaLabs(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	bin := filepath.Join(t.TempDir(), "nslab")
	if out, err := exec.Command("go", "build", "-o", bin, "../nslab").CombinedOutput(); err != nil {
		t.Fatalf("build nslab: %v\n%s", err, out)
	}
	// All at once: each under a name of its own, and their routing
	// converges meanwhile.
	r := Runner{NSLab: bin, Wait: 120 * time.Second, Name: func(string) string { return labtest.Name("k") }, Parallel: 8}
	labs, err := r.Labs("../../examples/imported")
	if err != nil {
		t.Fatal(err)
	}
	if len(labs) < 2 {
		t.Fatalf("examples/imported holds %d Kathara labs: %v", len(labs), labs)
	}
	results, err := r.Run("../../examples/imported")
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	Table(&table, results)
	t.Logf("\n%s", table.String())
	for _, x := range results {
		if x.Failed != "" || !slices.Equal(x.Passed, Stages) {
			t.Errorf("%s: passed %v, failed %s: %s", x.Dir, x.Passed, x.Failed, x.Reason)
		}
	}
	if !strings.Contains(table.String(), "destroyed clean") {
		t.Errorf("the table has no destroyed clean column:\n%s", table.String())
	}
}
