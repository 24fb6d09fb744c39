package kernel

import (
	"flag"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// samples are the kernel's samples/pktgen scenarios as jobs, with the
// samples' defaults (dst 198.18.0.42, dst_mac 90:e2:ba:ff:ff:ff).
func samples() map[string]*Job {
	base := func() *Job {
		return &Job{Device: "eth1", Frame: 64, DstIP: netip.MustParseAddr("198.18.0.42"), DstMAC: mac("90:e2:ba:ff:ff:ff")}
	}
	simple := base()
	simple.Count = 100000
	simple.UDPSrcMin, simple.UDPSrcMax = 9, 109
	simple.Flags = []string{"NO_TIMESTAMP", "UDPSRC_RND"}

	multiqueue := base()
	multiqueue.Threads, multiqueue.Count = 2, 100000
	multiqueue.UDPSrcMin, multiqueue.UDPSrcMax = 9, 109
	multiqueue.Flags = []string{"QUEUE_MAP_CPU", "NO_TIMESTAMP", "UDPSRC_RND"}

	burst := base()
	burst.Threads, burst.Duration, burst.Burst = 2, 10*time.Second, 32
	burst.Flags = []string{"QUEUE_MAP_CPU", "NO_TIMESTAMP"}

	flows := base()
	flows.Threads, flows.Duration = 2, 10*time.Second
	flows.SrcIP, flows.SrcIPMax = netip.MustParseAddr("198.18.0.0"), netip.MustParseAddr("198.19.255.255")
	flows.Flows, flows.FlowLen = 8000, 10
	flows.Flags = []string{"QUEUE_MAP_CPU", "NO_TIMESTAMP", "IPSRC_RND", "FLOW_SEQ"}

	perThread := base()
	perThread.Threads, perThread.Duration, perThread.Burst = 2, 10*time.Second, 32
	perThread.ThreadSrcIP = []netip.Addr{netip.MustParseAddr("198.18.1.1"), netip.MustParseAddr("198.18.2.1")}
	perThread.Flags = []string{"QUEUE_MAP_CPU", "NO_TIMESTAMP"}

	return map[string]*Job{
		"sample01_simple": simple, "sample02_multiqueue": multiqueue, "sample03_burst_single_flow": burst,
		"sample04_many_flows": flows, "sample05_flow_per_thread": perThread,
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file; got:\n%s", name, got)
	}
}

func TestRenderSamples(t *testing.T) {
	for name, job := range samples() {
		t.Run(name, func(t *testing.T) {
			if err := job.Validate(); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, w := range job.Render() {
				b.WriteString(w.String() + "\n")
			}
			golden(t, name+".writes", b.String())
		})
	}
}

func TestScriptGolden(t *testing.T) {
	job := samples()["sample01_simple"]
	golden(t, "sample01_simple.sh", job.Script("ns1"))
	job = samples()["sample03_burst_single_flow"]
	golden(t, "sample03_burst_single_flow.sh", job.Script(""))
}

// TestRenderOrder checks the orderings the kernel depends on, for every
// sample: xmit_mode before clone_skb and burst, size before rate, each
// device added to its thread before it is configured.
func TestRenderOrder(t *testing.T) {
	j := samples()["sample01_simple"]
	j.XmitMode, j.RatePPS, j.Count = XmitQueue, 1000, 10
	ws := j.Render()
	pos := map[string]int{}
	for i, w := range ws {
		pos[strings.Fields(w.Cmd)[0]] = i
	}
	if ws[0] != (Write{"pgctrl", "reset"}) {
		t.Errorf("first write %v, want a reset", ws[0])
	}
	for _, order := range [][2]string{{"add_device", "xmit_mode"}, {"xmit_mode", "clone_skb"}, {"pkt_size", "ratep"}, {"rem_device_all", "add_device"}} {
		if pos[order[0]] >= pos[order[1]] {
			t.Errorf("%s must come before %s: %v", order[0], order[1], ws)
		}
	}
}

func TestRenderDetails(t *testing.T) {
	tos, node := uint8(0x10), 1
	j := &Job{Device: "veth1", Count: 5, FrameMin: 128, FrameMax: 256, DstIP: netip.MustParseAddr("fd00::1"),
		DstIPMax: netip.MustParseAddr("fd00::9"), SrcIP: netip.MustParseAddr("fd00::2"), DstMAC: mac("02:00:00:00:00:01"),
		VLAN: &VLAN{ID: 100, Priority: 3}, MPLS: []uint32{0x0001000a}, Node: &node, TrafficClass: &tos, RateMbps: 100}
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, w := range j.Render() {
		got[w.Cmd] = true
	}
	for _, want := range []string{"min_pkt_size 124", "max_pkt_size 252", "dst6_min fd00::1", "dst6_max fd00::9", "src6 fd00::2",
		"vlan_id 100", "vlan_p 3", "vlan_cfi 0", "mpls 0001000a", "traffic_class 10", "node 1", "flag NODE", "rate 100"} {
		if !got[want] {
			t.Errorf("missing %q in %v", want, got)
		}
	}
	im := &Job{Device: "veth1", Count: 1, IMIX: []IMIXWeight{{64, 7}, {594, 4}, {1518, 1}}, DstIP: netip.MustParseAddr("10.0.0.1"), DstMAC: mac("02:00:00:00:00:01")}
	if err := im.Validate(); err != nil {
		t.Fatal(err)
	}
	if c := im.deviceCommands(0)[2]; c != "imix_weights 60,7 590,4 1514,1" {
		t.Errorf("imix rendered as %q", c)
	}
}
