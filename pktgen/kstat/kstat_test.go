package kstat

import (
	"runtime"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/ns"
)

// TestParseSNMP reads the Ip: pair of lines of /proc/net/snmp.
func TestParseSNMP(t *testing.T) {
	m := ParseSNMP("Ip: Forwarding DefaultTTL InReceives ForwDatagrams\nIp: 1 64 1234 1200\nIcmp: InMsgs\nIcmp: 5\n")
	if m["Forwarding"] != 1 || m["InReceives"] != 1234 || m["ForwDatagrams"] != 1200 || len(m) != 4 {
		t.Errorf("%v", m)
	}
}

// TestParseConntrack sums the per-CPU rows (hex), entries taken once.
func TestParseConntrack(t *testing.T) {
	m := ParseConntrack("entries clashres found new invalid ignore delete chainlength insert insert_failed drop early_drop icmp_error expect_new expect_create expect_delete search_restart\n" +
		"00000003  00000000 00000010 00000000 00000001 00000000 00000000 00000000 00000000 00000002 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n" +
		"00000003  00000000 00000020 00000000 00000000 00000000 00000000 00000000 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n")
	if m["entries"] != 3 || m["found"] != 0x30 || m["invalid"] != 1 || m["insert_failed"] != 3 {
		t.Errorf("%v", m)
	}
}

// TestPrivilegedReaders: the machine-wide readers give a row per online
// CPU, and a fresh namespace's IP MIB has its counters, read from inside
// it, with IPv6's beside IPv4's.
func TestPrivilegedReaders(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	if c, s := CPUTimes(), Softnet(); len(c) != runtime.NumCPU() || len(s) != runtime.NumCPU() || len(c[0]) != 8 || len(s[0]) != 4 {
		t.Errorf("cpu times %v, softnet %v, for %d CPUs", c, s, runtime.NumCPU())
	}
	n := labtest.OpenNamespace(t, ns.DefaultDir)
	mib, _, err := RouterCounters(n)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mib["ForwDatagrams"]; !ok || mib["Forwarding"] != 2 {
		t.Errorf("IP MIB of a fresh namespace (forwarding off: 2): %v", mib)
	}
	if _, ok := mib[ForwardedKey(true)]; !ok {
		t.Errorf("no %s in %v", ForwardedKey(true), mib)
	}
	if s := LinkSpeed(n, "lo"); s != 0 {
		t.Errorf("lo's speed %d, want unknown (0)", s)
	}
}

// TestParseNeighStat sums unresolved_discards over the CPUs' lines, in hex.
func TestParseNeighStat(t *testing.T) {
	text := "entries  allocs   destroys hash_grows lookups  hits     res_failed rcv_probes_mcast rcv_probes_ucast periodic_gc_runs forced_gc_runs unresolved_discards table_fulls\n" +
		"00000002 0000039b 00000438 00000001   00001dfb 000001ad 00000000   00000000         00000000         0000005b         00000000       0000001a            00000000\n" +
		"00000002 000003f1 00000352 00000002   00003bc8 000001ca 00000000   00000000         00000000         00000000         00000000       00000100            00000000\n"
	if got := ParseNeighStat(text); got != 0x1a+0x100 {
		t.Errorf("unresolved discards %d, want %d", got, 0x1a+0x100)
	}
	if got := ParseNeighStat("entries\n00000001\n"); got != 0 {
		t.Errorf("without the column: %d", got)
	}
}
