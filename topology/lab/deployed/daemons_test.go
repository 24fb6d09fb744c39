package deployed

import (
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/spec"
)

// TestDaemonDifferences: a node whose file runs routing daemons that are
// not running lacks what the file declares, naming them; all running, a
// node without daemons, or one stopped by nslab node stop is no
// difference.
func TestDaemonDifferences(t *testing.T) {
	frr := &spec.Node{Name: "r1", FRR: &spec.FRR{Daemons: []string{"ripd"}}}
	running := map[string][]string{"lab/r1/frr": {"zebra", "staticd"}}
	ds := daemonDifferences("lab", frr, running)
	if len(ds) != 1 || !ds[0].Missing || ds[0].Node != "r1" || !strings.Contains(ds[0].What, "the file runs FRR's ripd, which is not running") {
		t.Errorf("ripd not running: %+v", ds)
	}
	running["lab/r1/frr"] = append(running["lab/r1/frr"], "ripd")
	if ds := daemonDifferences("lab", frr, running); len(ds) != 0 {
		t.Errorf("every daemon running: %+v", ds)
	}
	if ds := daemonDifferences("lab", &spec.Node{Name: "h1"}, nil); len(ds) != 0 {
		t.Errorf("no daemons: %+v", ds)
	}
	stopped := &spec.Node{Name: "r2", FRR: &spec.FRR{}, Stopped: true}
	if ds := daemonDifferences("lab", stopped, nil); len(ds) != 0 {
		t.Errorf("a stopped node: %+v", ds)
	}
	bird := &spec.Node{Name: "r3", BIRD: &spec.BIRD{}}
	if ds := daemonDifferences("lab", bird, nil); len(ds) != 1 || !strings.Contains(ds[0].What, "BIRD's bird, which is not running") {
		t.Errorf("BIRD not running: %+v", ds)
	}
}
