package check

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
)

// broken lists the pairs check finds broken on the running lab.
func broken(t *testing.T, r *lab.Running) []string {
	t.Helper()
	pairs, err := Run(context.Background(), r.Opened, Options{Timeout: 300 * time.Millisecond, Tries: 2})
	if err != nil {
		t.Fatal(err)
	}
	return failing(pairs, Pair.Broken)
}

// TestPrivilegedLinkDownAndUp takes the link between the two routers down
// at run time (at r2's end, whose route back to the client goes through
// it): the pairs across it are expected silent by the kernels (r2 down,
// r1's end without carrier) and are, none is flagged, and the link's state
// is a difference from the file; brought up again, every pair answers, so
// the route the kernel removed is back.
func TestPrivilegedLinkDownAndUp(t *testing.T) {
	labtest.CoveredOnHost(t)
	l := labdeploy.Example(t, "two-routers.yaml", "k")
	r := labdeploy.Open(t, l)
	if b := broken(t, r); len(b) != 0 {
		t.Fatalf("broken before anything changed: %v", b)
	}
	ep := spec.Endpoint{Node: "r2", Interface: "eth0"}
	if err := r.SetLink(ep, false); err != nil {
		t.Fatal(err)
	}
	down := silent(assertKernelAgrees(t, r))
	if !contains(down, "client -> 10.2.0.2") || !contains(down, "server -> 10.1.0.2") || contains(down, "client -> 10.1.0.1") || contains(down, "server -> 10.2.0.1") {
		t.Errorf("with %s down, expected silent: %v", ep, down)
	}
	if !slices.Contains(r.Differences, deployed.Difference{Node: "r2", What: "eth0 is down in the kernel"}) {
		t.Errorf("differences %v", r.Differences)
	}
	if err := r.SetLink(ep, true); err != nil {
		t.Fatal(err)
	}
	if b := broken(t, r); len(b) != 0 {
		t.Errorf("broken after %s came back up: %v", ep, b)
	}
}

// TestPrivilegedImpairAtRuntime sets and clears impairments on a running
// lab. Every kernel takes a rate (tbf), read back as set; with netem (the
// VM), 100% loss on the router's egress makes check find the pairs across
// it broken, and clearing it mends them; without netem, asking for it
// fails naming netem and its kernel option, and nothing changes.
func TestPrivilegedImpairAtRuntime(t *testing.T) {
	l := labdeploy.Example(t, "client-router-server.yaml", "k")
	r := labdeploy.Open(t, l)
	ep := spec.Endpoint{Node: "ns2", Interface: "veth2"}
	if err := r.Impair(ep, &spec.Impair{Rate: 5e6, Limit: 100}); err != nil {
		t.Fatal(err)
	}
	st, err := r.Impairment(ep)
	if err != nil || st == nil || st.String() != "tbf rate 5Mbit limit 100" {
		t.Fatalf("read back %v, %v", st, err)
	}
	if b := broken(t, r); len(b) != 0 {
		t.Errorf("a 5 Mbit/s link broke pairs: %v", b)
	}
	lossy := &spec.Impair{Loss: 100}
	err = r.Impair(ep, lossy)
	var missing *qdisc.MissingError
	if errors.As(err, &missing) {
		if !strings.Contains(err.Error(), "netem") || !strings.Contains(err.Error(), "CONFIG_NET_SCH_NETEM") {
			t.Errorf("refusal does not name netem and its option: %v", err)
		}
		if st, _ := r.Impairment(ep); st == nil || st.Kind != "tbf" {
			t.Errorf("a refused impairment changed the link: %v", st)
		}
		t.Logf("no netem here: %v", err)
	} else {
		if err != nil {
			t.Fatal(err)
		}
		b := broken(t, r)
		if !contains(b, "ns1 -> 10.0.2.1") || contains(b, "ns1 -> 10.0.1.254") {
			t.Errorf("with 100%% loss on %s, broken: %v", ep, b)
		}
	}
	if had, err := r.ClearImpair(ep); err != nil || !had {
		t.Fatalf("clear: %v %v", had, err)
	}
	if st, err := r.Impairment(ep); err != nil || st != nil {
		t.Errorf("after clear: %v %v", st, err)
	}
	if b := broken(t, r); len(b) != 0 {
		t.Errorf("broken after the impairment was cleared: %v", b)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
