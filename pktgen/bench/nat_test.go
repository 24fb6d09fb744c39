package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/pktgen/bench/account"
	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/report"
)

// TestPrivilegedCountThroughNAT: a count run from the LAN host through the
// router's masquerade and stateful firewall is counted exactly at every
// hop, and the report carries the router's connection tracking, with its
// source, in every format.
func TestPrivilegedCountThroughNAT(t *testing.T) {
	l := labdeploy.Example(t, "nat-router.yaml", "b")
	r := labdeploy.Open(t, l)
	tr := *r.Lab.TrafficRun("lan-wan")
	tr.Duration, tr.Count, tr.RatePPS, tr.Engine = 0, 20000, 50000, "userspace"
	b, err := New(r, &tr, Options{Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	rep := ownReadsAgree(t, b, r)
	if rep.Sent != 20000 || rep.Received != 20000 || rep.Loss != 0 || rep.Unaccount != 0 {
		t.Fatalf("sent %d received %d loss %d unaccounted %d", rep.Sent, rep.Received, rep.Loss, rep.Unaccount)
	}
	if len(rep.Conntrack) != 1 || rep.Conntrack[0].Node != "gw" || rep.Conntrack[0].Entries == 0 || rep.Conntrack[0].Source != report.ConntrackSource {
		t.Fatalf("conntrack in the report: %+v", rep.Conntrack)
	}
	var out bytes.Buffer
	if err := report.Write(&out, "table", []*report.Report{rep}); err != nil || !strings.Contains(out.String(), "conntrack in gw: 1 entries") {
		t.Errorf("table: %v\n%s", err, out.String())
	}
	out.Reset()
	rep.Details = true // the long form names where the figures come from
	if err := report.Write(&out, "table", []*report.Report{rep}); err != nil || !strings.Contains(out.String(), "conntrack in gw (/proc/net/stat/nf_conntrack") {
		t.Errorf("table --details: %v\n%s", err, out.String())
	}
	rep.Details = false
	assertFormats(t, rep, "20000")
	if rt := rep.Routers[0]; rt.Node != "gw" || rt.Entered != 20000 || rt.Forwarded != 20000 {
		t.Errorf("router counts %+v", rt)
	}
	if !rep.Path[1].SNAT.IsValid() || rep.Path[1].SNATBy != "nodes.gw.nat[0]" {
		t.Errorf("the report's path does not show the masquerade: %+v", rep.Path[1])
	}
}

// TestParseConntrack sums the per-CPU rows and takes entries once.
func TestParseConntrack(t *testing.T) {
	text := `entries  clashres found new invalid ignore delete chainlength insert insert_failed drop early_drop icmp_error  expect_new expect_create expect_delete search_restart
00000003  00000000 00000001 00000002 00000000 00000000 00000000 00000000 00000002 00000001 00000000 00000000 00000000  00000000 00000000 00000000 00000000
00000003  00000000 00000000 00000001 00000004 00000000 00000000 00000000 00000001 00000000 0000000a 00000002 00000000  00000000 00000000 00000000 00000000
`
	m := kstat.ParseConntrack(text)
	if m["entries"] != 3 || m["new"] != 3 || m["invalid"] != 4 || m["insert_failed"] != 1 || m["drop"] != 10 || m["early_drop"] != 2 || m["found"] != 1 {
		t.Errorf("parsed %v", m)
	}
	c := account.ConntrackCounts("gw", map[string]uint64{"entries": 1, "drop": 4}, m)
	if c.EntriesBefore != 1 || c.Entries != 3 || c.Drop != 6 || c.Dropped() != 6+1+2 {
		t.Errorf("counts %+v", c)
	}
}
