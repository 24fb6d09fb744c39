package lab

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/vishvananda/netlink"
)

// TestPrivilegedNodeStopStart: stopping the router of client-router-server
// takes its links down at both ends (the client's default route goes with
// its carrier) and stops its service; inspect says it is stopped; starting
// it brings both ends up, puts the file's routes back on both sides and
// starts the service again, and traffic passes as before. A second stop,
// and a start of a running node, are refused.
func TestPrivilegedNodeStopStart(t *testing.T) {
	labtest.CoveredOnHost(t)
	data, err := os.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, strings.Replace(string(data), "    forwarding: true\n", "    forwarding: true\n    run: [\"sleep 1000\"]\n", 1))
	f.deploy()
	f.ping("ns1", "10.0.2.1")
	r, err := f.m.Open(f.lab)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, _ := f.m.loadState(f.lab.Name)
	svc := st.Services[0]

	if err := r.StopNode("ns2"); err != nil {
		t.Fatal(err)
	}
	for _, ep := range []string{"ns1:veth1", "ns2:veth1-peer", "ns2:veth2", "ns3:veth2-peer"} {
		if up := linkUp(t, f, ep); up {
			t.Errorf("%s is up after ns2 stopped", ep)
		}
	}
	if deployed.Alive(svc.PID, svc.Start) {
		t.Errorf("ns2's service (pid %d) runs after ns2 stopped", svc.PID)
	}
	if routes := defaultRoutes(t, f, "ns1"); routes != 0 {
		t.Errorf("ns1 keeps %d default routes through a link whose carrier is gone", routes)
	}
	info, err := f.m.Store().Inspect(f.lab.Name)
	if err != nil || !info.Nodes[1].Stopped || info.Nodes[0].Stopped {
		t.Errorf("inspect does not show ns2 stopped (and ns1 not): %+v %v", info.Nodes, err)
	}
	if err := r.StopNode("ns2"); err == nil || !strings.Contains(err.Error(), "stopped already") {
		t.Errorf("second stop: %v", err)
	}

	if err := r.StartNode(context.Background(), "ns2"); err != nil {
		t.Fatal(err)
	}
	for _, ep := range []string{"ns1:veth1", "ns2:veth1-peer", "ns2:veth2", "ns3:veth2-peer"} {
		if up := linkUp(t, f, ep); !up {
			t.Errorf("%s is down after ns2 started", ep)
		}
	}
	if routes := defaultRoutes(t, f, "ns1"); routes != 1 {
		t.Errorf("ns1 has %d default routes after ns2 started, want the file's one back", routes)
	}
	f.ping("ns1", "10.0.2.1")
	st, _ = f.m.loadState(f.lab.Name)
	if len(st.Stopped) != 0 || len(st.Services) != 1 || st.Services[0].PID == svc.PID || !deployed.Alive(st.Services[0].PID, st.Services[0].Start) {
		t.Errorf("after start: stopped %v, services %+v (before: pid %d)", st.Stopped, st.Services, svc.PID)
	}
	if err := r.StartNode(context.Background(), "ns2"); err == nil || !strings.Contains(err.Error(), "not stopped") {
		t.Errorf("start of a running node: %v", err)
	}
}

// linkUp reports whether interface NODE:IF is administratively up.
func linkUp(t *testing.T, f *fixture, ep string) bool {
	t.Helper()
	node, ifc, _ := strings.Cut(ep, ":")
	l, err := nlsafe.LinkByName(labtest.Handle(t, f.m.netnsDir(), f.ns(node)), ifc)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().Flags&1 != 0 // IFF_UP
}

// defaultRoutes counts node's IPv4 default routes in its main table.
func defaultRoutes(t *testing.T, f *fixture, node string) int {
	t.Helper()
	routes, err := labtest.Handle(t, f.m.netnsDir(), f.ns(node)).RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range routes {
		if r.Dst == nil || r.Dst.IP.IsUnspecified() {
			n++
		}
	}
	return n
}
