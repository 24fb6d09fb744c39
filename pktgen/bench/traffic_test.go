package bench

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/walk"

	"github.com/nslab/nslab/topology/spec"
)

// TestTrafficSelection: the command line's changes apply to a copy of the
// file's run, and the result is checked as the file's runs are, before
// anything is deployed.
func TestTrafficSelection(t *testing.T) {
	data, err := os.ReadFile("../../examples/forwarding-benchmark.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.Parse("fwd.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Traffic(l, Selection{Rate: "200kpps", CPUs: "1", Duration: time.Second, Frames: []int{128}})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Name != "forward" || tr.RatePPS != 200000 || tr.CPUs.String() != "1" || tr.Threads != 1 || tr.Duration != time.Second || tr.Frames[0] != 128 {
		t.Errorf("selected %+v", tr)
	}
	if l.Traffic[0].RatePPS != 0 || l.Traffic[0].CPUs.String() != "0" {
		t.Errorf("the file's run changed: %+v", l.Traffic[0])
	}
	if tr, err := Traffic(l, Selection{From: "client:eth0", To: "10.0.2.1"}); err != nil || tr.Duration != DefaultDuration || tr.Frames[0] != spec.DefaultFrame {
		t.Errorf("command-line run: %+v %v", tr, err)
	}
	for _, c := range []struct {
		sel  Selection
		want string
	}{
		{Selection{Name: "nope"}, `no traffic run or group "nope" (its runs: forward, sweep, flows)`},
		{Selection{Engine: "dpdk"}, `engine "dpdk"`},
		{Selection{Frames: []int{40}}, "frame 40 bytes"},
		{Selection{From: "client", To: "10.0.2.1"}, "must be node:interface"},
		{Selection{CPUs: "0,1", Threads: 3}, "one thread runs per CPU"},
		{Selection{Rate: "fast"}, `rate: rate "fast": use max`},
	} {
		if _, err := Traffic(l, c.sel); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.sel, err, c.want)
		}
	}
	// A run the file's routes take nowhere is kept for the deployed lab's
	// kernels to judge; by the file it has no path (see routedByFile).
	tr, err = Traffic(l, Selection{From: "client:eth0", To: "10.9.9.9"})
	if err != nil || walk.TrafficPath(l, tr) == nil || !strings.Contains(walk.TrafficPath(l, tr).Error(), "no interface of the lab has address 10.9.9.9") {
		t.Errorf("a run to no address of the lab: %v, by the file %v", err, walk.TrafficPath(l, tr))
	}
	// The library names the field, never a flag: cmd names the flag.
	var fe *FieldError
	if _, err := Traffic(l, Selection{Rate: "fast"}); !errors.As(err, &fe) || fe.Field != "rate" || strings.Contains(err.Error(), "--") {
		t.Errorf("a bad rate gives %v; want a FieldError of rate that names no flag", err)
	}
}
