package userspace

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/topology/ns"
)

// passXDP attaches "return XDP_PASS" to a lab node's interface for the
// test's life: the router's ingress then has the NAPI instance that XDP
// frames are delivered to, and the frames go up its stack as usual.
func (c *crs) passXDP(node, ifname string) {
	c.t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { prog.Close() })
	n, err := ns.Open(ns.DefaultDir, c.ns(node))
	if err != nil {
		c.t.Fatal(err)
	}
	defer n.Close()
	idx := c.link(node, ifname).Attrs().Index
	var l link.Link
	if err := n.Do(func() error {
		var err error
		l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: idx})
		return err
	}); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { l.Close() })
}

// skipUnlessLiveFrames skips the test when the machine's policy refuses
// the live-frame call in the client's namespace (the probe names why), and
// fails it when the probe fails otherwise: a refusal of our own making is
// a bug, not a reason to skip.
func (c *crs) skipUnlessLiveFrames() {
	c.t.Helper()
	err := c.client.Do(ProbeLiveFrames)
	switch {
	case errors.Is(err, ErrLiveFramesRefused):
		c.t.Skipf("the XDP engine cannot run here: %v", err)
	case err != nil:
		c.t.Fatalf("live-frame probe: %v", err)
	}
}

// TestPrivilegedXDPThroughRouter: the live-frame engine's frames cross the
// router to the server as the AF_PACKET engine's do: exactly the count
// handed (the device's drops counted as errors), every frame with valid
// checksums (the server's UDP counted none bad), sequence numbers 1..N
// once each, and timestamps of the wall clock. The engine sends at the
// device's speed, so the count is one the router's queues hold at once
// (3000 lost nine tenths at the router here).
func TestPrivilegedXDPThroughRouter(t *testing.T) {
	c := deployCRS(t)
	c.skipUnlessLiveFrames()
	c.passXDP("ns2", "veth1-peer")
	const n = 200
	cp := c.capture("ns3", "veth2-peer")
	c.drain()
	before, udpBefore := c.serverRx(), c.udpStats()
	job := c.job(n)
	job.RatePPS = 0
	start := time.Now()
	res, err := (XDP{}).Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	got := c.settle() - before
	frames := cp.wait(int(res.Sent))
	c.drain()
	udp := c.udpStats()
	t.Logf("sent %d (+%d the device dropped) in %v; server rx +%d, captured %d", res.Sent, res.Errors, res.Elapsed, got, len(frames))
	if res.Engine != XDPName || res.Sent+res.Errors != n || res.Sent == 0 {
		t.Fatalf("%s: sent %d + dropped %d, want %d handed", res.Engine, res.Sent, res.Errors, n)
	}
	if got != res.Sent || uint64(len(frames)) != res.Sent {
		t.Fatalf("sent %d, server rx +%d, captured %d", res.Sent, got, len(frames))
	}
	if bad := udp["InCsumErrors"] - udpBefore["InCsumErrors"]; bad != 0 {
		t.Errorf("%d UDP checksum errors at the server", bad)
	}
	seen := map[uint32]bool{}
	for i, f := range frames {
		seq, msg := checkFrame(f, 64-fcs, c.routerMAC)
		if msg != "" {
			t.Fatalf("frame %d: %s", i, msg)
		}
		if seq < engine.FirstSeq || seq >= engine.FirstSeq+n || seen[seq] {
			t.Fatalf("frame %d: sequence %d out of range or repeated", i, seq)
		}
		seen[seq] = true
		udp := f[ethLen+ipv4Len:]
		stamp := time.Unix(int64(be32(udp[16:])), int64(be32(udp[20:]))*1000)
		if stamp.Before(start.Add(-time.Second)) || stamp.After(time.Now().Add(time.Second)) {
			t.Fatalf("frame %d: timestamp %v, the run was at %v", i, stamp, start)
		}
	}
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// TestPrivilegedXDPRefusesPeerWithoutNAPI: a veth whose peer has neither
// an XDP program nor GRO drops XDP frames without a counter; the engine
// finds out with its probe and says what to do, instead of reporting
// packets nobody received.
func TestPrivilegedXDPRefusesPeerWithoutNAPI(t *testing.T) {
	c := deployCRS(t)
	c.skipUnlessLiveFrames()
	job := c.job(100)
	job.RatePPS = 0
	_, err := (XDP{}).Run(context.Background(), job)
	if err == nil || !strings.Contains(err.Error(), "delivered 0 of 8 XDP frames") || !strings.Contains(err.Error(), "gro on") {
		t.Fatalf("got %v", err)
	}
}

// TestPrivilegedXDPDurationAndCancel: a duration run ends at its duration,
// and a cancelled one within about a call.
func TestPrivilegedXDPDurationAndCancel(t *testing.T) {
	c := deployCRS(t)
	c.skipUnlessLiveFrames()
	c.passXDP("ns2", "veth1-peer")
	job := c.job(0)
	job.RatePPS, job.Duration = 0, 500*time.Millisecond
	res, err := (XDP{}).Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("duration run: %d frames in %v", res.Sent, res.Elapsed)
	if res.Sent == 0 || res.Elapsed < 400*time.Millisecond {
		t.Errorf("a 500 ms run sent %d in %v", res.Sent, res.Elapsed)
	}
	job.Duration = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	var stoppedAt time.Time
	go func() { time.Sleep(300 * time.Millisecond); stoppedAt = time.Now(); cancel() }()
	_, err = (XDP{}).Run(ctx, job)
	late := time.Since(stoppedAt)
	t.Logf("returned %v after cancel", late)
	// timeout: it stops on cancel, not at the end of its hour (how fast: the log line)
	if err == nil || !strings.Contains(err.Error(), "context canceled") || late > time.Minute {
		t.Errorf("returned %v after cancel, error %v", late, err)
	}
}

func TestCheckXDPRefuses(t *testing.T) {
	base := engine.Job{Count: 1, Frame: 64, DstIP: netip.MustParseAddr("10.0.0.1"), DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}}
	if _, err := checkXDP(base); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(j *engine.Job)
		msg  string
	}{
		{func(j *engine.Job) { j.Options = map[string]string{"qdisc": "through"} }, "option qdisc is not one the XDP engine can honour"},
		{func(j *engine.Job) { j.RatePPS = 1000 }, "a rate: the kernel's live-frame mode"},
		{func(j *engine.Job) { j.FrameMax = 128 }, "a frame size range or mix needs a packet of its own"},
		{func(j *engine.Job) { j.DstIPMax = netip.MustParseAddr("10.0.0.9") }, "an address range"},
		{func(j *engine.Job) { j.UDPSrc = engine.PortRange{Min: 1, Max: 9} }, "a port range"},
		{func(j *engine.Job) { j.Flows = 4 }, "flows needs"},
		{func(j *engine.Job) { j.Frame = 60 }, "below the minimum of 64"},
	} {
		j := base
		c.edit(&j)
		if _, err := checkXDP(j); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("want %q, got %v", c.msg, err)
		}
	}
}
