//go:build vmtest

// These tests run inside a VM booted by `make vmtest` (cmd/nslab-vmtest) on
// a Debian distribution kernel whose pktgen.ko and veth.ko are loaded: the
// real kernel path that our own machines' kernel (built without pktgen)
// cannot run.
package kernel

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// vmRate is a rate the emulated VM's forwarding path holds without loss.
const vmRate = 30000

// crs is a deployed client-router-server lab for one test.
type crs struct {
	t         *testing.T
	routerMAC net.HardwareAddr
	client    *ns.NS
}

func deployCRS(t *testing.T) *crs {
	t.Helper()
	l, err := spec.ReadFile("../../examples/client-router-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := &lab.Manager{StateDir: t.TempDir()}
	if _, err := m.Deploy(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := m.Destroy(l.Name); err != nil {
			t.Errorf("destroy: %v", err)
		}
	})
	c := &crs{t: t}
	c.sink()
	c.routerMAC = link(t, "ns2", "veth1-peer").Attrs().HardwareAddr
	if c.client, err = ns.Open(ns.DefaultDir, "ns1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.client.Close() })
	c.prime()
	return c
}

// sink binds UDP port 9 (pktgen's) in the server and never reads: packets
// are counted at the interface and dropped at the socket, and the server
// sends no ICMP port unreachable back (which would make it use, and later
// re-probe, its ARP entry for the router: one more packet at its interface).
func (c *crs) sink() {
	server, err := ns.Open(ns.DefaultDir, "ns3")
	if err != nil {
		c.t.Fatal(err)
	}
	defer server.Close()
	var conn net.PacketConn
	if err := server.Do(func() error { var err error; conn, err = net.ListenPacket("udp4", ":9"); return err }); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close() })
}

// prime sends one packet through the router so that it resolves the
// server's MAC (its ARP request reaches the server) before anything is
// counted, and checks the path delivers.
func (c *crs) prime() {
	before := c.serverRx()
	if _, err := c.controller().Run(context.Background(), c.job(1)); err != nil {
		c.t.Fatalf("priming packet: %v", err)
	}
	if got := c.waitRx() - before; got != 2 {
		c.t.Fatalf("priming: server received %d packets, want the router's ARP request and the packet", got)
	}
}

// link reads an interface of a lab namespace through netlink.
func link(t *testing.T, nsName, ifname string) netlink.Link {
	t.Helper()
	n, err := ns.Open(ns.DefaultDir, nsName)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	h, err := n.NetlinkHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	l, err := h.LinkByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (c *crs) serverRx() uint64 { return link(c.t, "ns3", "veth2-peer").Attrs().Statistics.RxPackets }

// waitRx waits until the server's rx counter stops moving (packets still in
// the router's backlog when pktgen returns) and returns it.
func (c *crs) waitRx() uint64 {
	last := c.serverRx()
	for i := 0; i < 40; i++ {
		time.Sleep(50 * time.Millisecond)
		now := c.serverRx()
		if now == last {
			return now
		}
		last = now
	}
	return last
}

func (c *crs) job(count uint64) *Job {
	return &Job{Device: "veth1", DeviceKind: "veth", DeviceMTU: 1500, Count: count, Frame: 64, RatePPS: vmRate,
		DstIP: netip.MustParseAddr("10.0.2.1"), DstMAC: c.routerMAC}
}

func (c *crs) controller() *Controller {
	ctl, err := NewController(c.client)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(ctl.Close)
	return ctl
}

// TestVMForwardExactCount: acceptance 1. N frames through the router arrive
// at the server exactly, pktgen says N, and the parsed Result agrees with the
// file's own counters.
func TestVMForwardExactCount(t *testing.T) {
	c := deployCRS(t)
	const n = 100000
	before := c.serverRx()
	res, err := c.controller().Run(context.Background(), c.job(n))
	if err != nil {
		t.Fatal(err)
	}
	got := c.waitRx() - before
	d := res.Devices[0]
	t.Logf("sent %d in %v (%d pps, %d Mb/s); server received %d", d.Result.Sent, d.Result.Elapsed, d.Result.PPS, d.Result.Mbps, got)
	if got != n {
		t.Errorf("server rx grew by %d, want exactly %d", got, n)
	}
	if !d.Result.OK || d.Result.Sent != n || d.Sent != n || d.Result.PktSize != 60 || d.Result.Errors != 0 {
		t.Errorf("result %+v, pkts-sofar %d", d.Result, d.Sent)
	}
	if d.Params["dst_mac"] != c.routerMAC.String() || d.Params["dst_min"] != "10.0.2.1" {
		t.Errorf("params %v", d.Params)
	}
	if want := d.Result.PPS * 8 * 60 / 1e6; d.Result.Mbps != want {
		t.Errorf("Mb/sec %d, want pps*8*60/1e6 = %d", d.Result.Mbps, want)
	}
	assertIdle(t, c.controller())
}

// TestVMTwoThreads: acceptance 2. Two kpktgend threads, dev@N entries: the
// server receives the sum, and each thread reports its own result.
func TestVMTwoThreads(t *testing.T) {
	c := deployCRS(t)
	job := c.job(20000)
	job.Threads, job.RatePPS = 2, vmRate/2
	before := c.serverRx()
	res, err := c.controller().Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	got := c.waitRx() - before
	if len(res.Devices) != 2 || res.Devices[0].Name != "veth1@0" || res.Devices[1].Name != "veth1@1" {
		t.Fatalf("devices %+v", res.Devices)
	}
	sum := Summarize(res, 64, "kernel pktgen")
	for _, th := range sum.Threads {
		if th.Sent != 20000 {
			t.Errorf("thread %s sent %d", th.Name, th.Sent)
		}
	}
	if sum.Sent != 40000 || got != 40000 {
		t.Errorf("sent %d, server received %d, want 40000 both", sum.Sent, got)
	}
}

// TestVMStopOnCancel: acceptance 3. A count-0 run is stopped by context
// cancel within 200 ms of the deadline, and pktgen is reset afterwards.
func TestVMStopOnCancel(t *testing.T) {
	c := deployCRS(t)
	for _, byDuration := range []bool{false, true} {
		job := c.job(0)
		ctx := context.Background()
		var deadline time.Time
		if byDuration {
			job.Duration = time.Second
			deadline = time.Now().Add(job.Duration)
		} else {
			job.Duration = time.Hour
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Second)
			defer cancel()
			deadline, _ = ctx.Deadline()
		}
		ctl := c.controller()
		res, err := ctl.Run(ctx, job)
		late := time.Since(deadline)
		t.Logf("duration field %v: returned %v after the deadline: %v", byDuration, late, err)
		if byDuration == (err != nil) || (!byDuration && !errors.Is(err, context.DeadlineExceeded)) {
			t.Errorf("error %v", err)
		}
		if !byDuration && late < 0 {
			t.Errorf("returned %v before the deadline", -late)
		}
		// With the duration field, the clock starts at "start", after the
		// configuration: check the time pktgen itself measured.
		if byDuration && res != nil {
			if el := res.Devices[0].Result.Elapsed; el < time.Second {
				t.Errorf("pktgen ran %v for a 1s duration", el)
			}
		}
		if res == nil || !res.Stopped || res.Devices[0].Sent == 0 {
			t.Errorf("result %+v", res)
		}
		assertIdle(t, ctl)
	}
}

// assertIdle checks pktgen was reset: no thread lists a device.
func assertIdle(t *testing.T, ctl *Controller) {
	t.Helper()
	threads, err := ctl.Threads()
	if err != nil {
		t.Fatal(err)
	}
	if len(threads) == 0 {
		t.Fatal("no kpktgend threads")
	}
	for name, th := range threads {
		if len(th.Running)+len(th.Stopped) > 0 {
			t.Errorf("%s still has devices: %+v", name, th)
		}
	}
}

// TestVMRefusals: acceptance 4. What validation refuses, the kernel refuses
// too when validation is bypassed; and a second run in a namespace where one
// runs is refused.
func TestVMRefusals(t *testing.T) {
	c := deployCRS(t)
	for _, edit := range []func(j *Job){
		func(j *Job) { j.CloneSKB = 100 },
		func(j *Job) { j.Burst = 32 },
	} {
		job := c.job(10)
		edit(job)
		if err := job.Validate(); err == nil || !strings.Contains(err.Error(), "on a veth device") {
			t.Errorf("validation: %v", err)
		}
		ctl := c.controller()
		_, err := ctl.RunUnchecked(context.Background(), job)
		if err == nil || !strings.Contains(err.Error(), "ENOTSUPP") {
			t.Errorf("kernel: %v", err)
		}
		t.Logf("kernel refused: %v", err)
		assertIdle(t, ctl)
	}
	for _, edit := range []func(j *Job){
		func(j *Job) { j.Frame = 60 },
		func(j *Job) { j.Frame = 0 },
		func(j *Job) { j.DstMAC = nil },
	} {
		job := c.job(10)
		edit(job)
		if _, err := c.controller().Run(context.Background(), job); !errors.As(err, new(InvalidJob)) {
			t.Errorf("want a validation error, got %v", err)
		}
	}

	// A run in progress, then a second one in the same namespace.
	first := c.job(0)
	first.Duration = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c.controller().Run(ctx, first); done <- err }()
	ctl := c.controller()
	waitRunning(t, ctl)
	_, err := ctl.Run(context.Background(), c.job(10))
	if !errors.Is(err, ErrBusy) {
		t.Errorf("second run: %v", err)
	}
	t.Logf("refused: %v", err)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("first run: %v", err)
	}
	assertIdle(t, ctl)
}

func waitRunning(t *testing.T, ctl *Controller) {
	t.Helper()
	for i := 0; i < 100; i++ {
		threads, err := ctl.Threads()
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range threads {
			if len(th.Running) > 0 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the first run never showed as running")
}

// TestVMPerNamespace: acceptance 5. pktgen state is per namespace: a run in
// ns1 leaves the host namespace's pktgen as it was.
func TestVMPerNamespace(t *testing.T) {
	c := deployCRS(t)
	// This goroutine's thread is in the host namespace (nslab never leaves
	// a thread elsewhere); locked, /proc/thread-self/net/pktgen is the
	// host's. (/proc/net would be the main thread's view.)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	host := dirFiles{dir: DefaultDir}
	must := func(file, cmd string) {
		if err := host.write(file, cmd); err != nil {
			t.Fatalf("host %s > %s: %v", cmd, file, err)
		}
	}
	// Cleared as the controller clears: a bare reset could take lo away
	// later, when the kernel thread gets to it.
	direct := func(fn func() error) error { return fn() }
	hostCtl := &Controller{Namespace: "host", files: host, run: direct}
	if err := hostCtl.clearThreads(nil); err != nil {
		t.Fatal(err)
	}
	must("kpktgend_0", "add_device lo")
	must("lo", "count 7")
	t.Cleanup(func() {
		if err := hostCtl.clearThreads(nil); err != nil {
			t.Error(err)
		}
	})

	if _, err := c.controller().Run(context.Background(), c.job(1000)); err != nil {
		t.Fatal(err)
	}
	text, err := host.read("kpktgend_0")
	if err != nil {
		t.Fatal(err)
	}
	if th := ParseThread(text); len(th.Stopped) != 1 || th.Stopped[0] != "lo" {
		t.Errorf("host kpktgend_0 after a run in ns1: %q", text)
	}
	text, err = host.read("lo")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := ParseStatus(text); err != nil || st.Params["count"] != "7" {
		t.Errorf("host lo after a run in ns1: %v %q", err, text)
	}
	if _, err := os.Stat(DefaultDir + "/veth1"); err == nil {
		t.Errorf("ns1's device shows in the host namespace")
	}
}

// TestVMKernelEngine runs the engine interface end to end (the path bench
// will use) and checks the summary.
func TestVMKernelEngine(t *testing.T) {
	c := deployCRS(t)
	before := c.serverRx()
	res, err := Engine{}.Run(context.Background(), engineJob(c))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.waitRx() - before; res.Sent != 5000 || got != 5000 || res.Engine != "kernel pktgen" || len(res.Threads) != 1 {
		t.Errorf("result %+v, server received %d", res, got)
	}
}

func engineJob(c *crs) engine.Job {
	return engine.Job{Sender: c.client, Interface: "veth1", Count: 5000, Frame: 64, RatePPS: vmRate,
		DstIP: netip.MustParseAddr("10.0.2.1"), DstMAC: c.routerMAC}
}

// TestVMScriptBackToBack runs the generated script by hand, as a user
// would, twice in a row in the client's namespace: the second run's device
// must survive the first run's reset, and each run must wait for its
// packets to be sent before it prints them.
func TestVMScriptBackToBack(t *testing.T) {
	c := deployCRS(t)
	const n = 5000
	before := c.serverRx()
	for i := range 2 {
		var out []byte
		err := c.client.Do(func() error {
			var err error
			out, err = exec.Command("sh", "-c", c.job(n).Script("")).CombinedOutput()
			return err
		})
		if err != nil || !strings.Contains(string(out), "Result: OK:") || !strings.Contains(string(out), "pkts-sofar: 5000") {
			t.Fatalf("run %d: %v\n%s", i, err, out)
		}
	}
	if got := c.waitRx() - before; got != 2*n {
		t.Errorf("server received %d, want %d", got, 2*n)
	}
	assertIdle(t, c.controller())
}
