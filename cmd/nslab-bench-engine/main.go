// Command nslab-bench-engine measures nslab's engines (AF_PACKET and XDP
// live frames) against trafgen (netsniff-ng) in the same run: 64-byte
// frames on a veth pair in fresh namespaces, towards a receiver that drops
// them with XDP, 5 s each (make bench-engine). It prints the rates, their
// ratio, the CPU time per packet each spends on its one CPU with and
// without the receiver's drop (BPF's softirq time), and the rate with two
// threads.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/nslab/nslab/internal/labname"
	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/pktgen/softirq"
	"github.com/nslab/nslab/pktgen/userspace"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

const pairYAML = `name: %[1]s
prefix: %[1]s-
nodes:
  tx:
    interfaces:
      t0: {addresses: [10.99.0.1/24], mac: "02:00:00:99:00:01"}
  rx:
    interfaces:
      r0: {addresses: [10.99.0.2/24], mac: "02:00:00:99:00:02"}
links:
  - endpoints: [tx:t0, rx:r0]
`

// warmup is skipped at the start of every run, window is measured.
const warmup = 500 * time.Millisecond

func main() {
	window := flag.Duration("time", 5*time.Second, "measured time of each run")
	rounds := flag.Int("rounds", 3, "alternating rounds of nslab and trafgen (medians reported)")
	flag.Parse()
	if err := lab.CheckPrivileges(); err != nil {
		fail(err)
	}
	if _, err := exec.LookPath("trafgen"); err != nil {
		fail(fmt.Errorf("trafgen not found: install netsniff-ng (make bench-engine does)"))
	}
	b, err := setup()
	if err != nil {
		fail(err)
	}
	defer b.close()
	fmt.Printf("veth pair %s:t0 -> %s:r0, receiver drops with XDP (%s mode), 64-byte frames, %s per run\n\n", b.l.Namespace("tx"), b.l.Namespace("rx"), b.xdpMode, *window)
	// Alternate the contenders so that a slow spell of the machine hits
	// both alike; report medians.
	var ours, theirs, flows, live []sample
	for r := 0; r < *rounds; r++ {
		ours = append(ours, b.measure("nslab userspace, 1 thread", *window, func(ctx context.Context) error { return b.runOurs(ctx, 1) }))
		theirs = append(theirs, b.measure("trafgen, 1 CPU (-P 1)", *window, b.runTrafgen))
		live = append(live, b.measure("nslab XDP live frames, 1 thread", *window, b.runLive))
		flows = append(flows, b.measure("nslab userspace, 1 thread, 64 flows", *window, func(ctx context.Context) error { return b.runFlows(ctx, 1, 64) }))
	}
	two := b.measure("nslab userspace, 2 threads", *window, func(ctx context.Context) error { return b.runOurs(ctx, 2) }).pps
	o, t := median(pps(ours)), median(pps(theirs))
	fmt.Printf("\nmedian of %d: nslab 1 thread %.0f pps, trafgen 1 CPU %.0f pps: %.2fx (target >= 1.0x, goal 1.2x)\n", *rounds, o, t, o/t)
	b.costs(ours, theirs, live)
	f := median(pps(flows))
	fmt.Printf("nslab 1 thread, 64 flows (a source port each): %.0f pps, %.2fx trafgen (%.2fx of one flow)\n", f, f/t, f/o)
	fmt.Printf("nslab 2 threads: %.0f pps (%.2fx of 1 thread)\n", two, two/o)
	if two < o {
		// Measured: more threads, fewer packets. The receiver's XDP
		// program runs on the same CPUs as the senders.
		fmt.Printf("  two threads sent less than one: with %d CPUs the receiver's XDP drop competes with them\n", runtime.NumCPU())
	}
}

type bench struct {
	m       *lab.Manager
	l       *spec.Lab
	run     *lab.Running
	xdpMode string
	irq     *softirq.Counter // nil where BPF cannot count softirq time
}

// setup deploys the pair in fresh namespaces and attaches the XDP sink.
func setup() (*bench, error) {
	name := labname.Random("be")
	l, err := spec.Parse(name+".yaml", []byte(fmt.Sprintf(pairYAML, name)))
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "nslab-bench-engine-")
	if err != nil {
		return nil, err
	}
	b := &bench{m: &lab.Manager{StateDir: dir}, l: l}
	if _, err := b.m.Deploy(context.Background(), l); err != nil {
		return nil, err
	}
	if b.run, err = b.m.Open(l); err != nil {
		b.close()
		return nil, err
	}
	rx := b.run.Node("rx")
	r0, err := nlsafe.LinkByName(rx.Handle, "r0")
	if err == nil {
		b.xdpMode, err = attachXDPDrop(rx.NS, r0)
	}
	if err != nil {
		b.close()
		return nil, err
	}
	if b.irq, err = softirq.Open(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-engine: no softirq counter:", err)
	}
	return b, nil
}

func (b *bench) close() {
	if b.irq != nil {
		_ = b.irq.Close() // the programs go with the process anyway
	}
	if b.run != nil {
		b.run.Close()
	}
	if _, err := b.m.Destroy(b.l.Name); err != nil {
		fmt.Fprintln(os.Stderr, "bench-engine: destroy:", err)
	}
	if err := os.RemoveAll(b.m.StateDir); err != nil {
		fmt.Fprintln(os.Stderr, "bench-engine:", err)
	}
}

// sent reads the packets the sender's veth has sent (and the receiver
// took): its tx counter.
func (b *bench) sent() uint64 {
	l, err := nlsafe.LinkByName(b.run.Node("tx").Handle, "t0")
	if err != nil {
		fail(err)
	}
	s := l.Attrs().Statistics
	return s.TxPackets
}

// sample is one measured run: its packet rate, and the NET_RX softirq
// time per packet on every CPU (the receiver's XDP drop; -1 without the
// BPF counter).
type sample struct{ pps, rxNs float64 }

func pps(s []sample) []float64 {
	out := make([]float64, len(s))
	for i, x := range s {
		out[i] = x.pps
	}
	return out
}

func rxNs(s []sample) []float64 {
	out := make([]float64, len(s))
	for i, x := range s {
		out[i] = x.rxNs
	}
	return out
}

// costs prints each sender's CPU time per packet: the wall time over the
// packets (each keeps its one CPU busy, and the receiver's XDP drop runs
// in softirq on the same CPU), and without that drop, whose time the BPF
// softirq counter measured: the send cost proper.
func (b *bench) costs(ours, theirs, live []sample) {
	o, t, x := median(pps(ours)), median(pps(theirs)), median(pps(live))
	fmt.Printf("CPU time per packet sent, on the sender's one CPU: nslab AF_PACKET %.0f ns (%.2fx trafgen's), nslab XDP live frames %.0f ns (%.2fx), trafgen %.0f ns (goal <= 0.67x)\n", 1e9/o, t/o, 1e9/x, t/x, 1e9/t)
	if b.irq == nil {
		fmt.Println("  (no BPF softirq counter: the receiver's share could not be taken out)")
		return
	}
	ro, rt, rx := median(rxNs(ours)), median(rxNs(theirs)), median(rxNs(live))
	so, st, sx := 1e9/o-ro, 1e9/t-rt, 1e9/x-rx
	fmt.Printf("  less the receiver's XDP drop (NET_RX softirq, BPF: %.0f, %.0f and %.0f ns a packet): send cost nslab AF_PACKET %.0f ns (%.2fx), nslab XDP live frames %.0f ns (%.2fx), trafgen %.0f ns\n", ro, rx, rt, so, so/st, sx, sx/st, st)
}

// measure runs a sender for warmup+window+a margin and returns the packet
// rate over the window, from the sender's tx counter, and the NET_RX
// softirq time per packet meanwhile.
func (b *bench) measure(title string, window time.Duration, run func(ctx context.Context) error) sample {
	ctx, cancel := context.WithTimeout(context.Background(), warmup+window+time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	time.Sleep(warmup)
	r0 := b.readIRQ()
	c0, t0 := b.sent(), time.Now()
	time.Sleep(window)
	c1, t1 := b.sent(), time.Now()
	r1 := b.readIRQ()
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		fail(fmt.Errorf("%s: %w", title, err))
	}
	rate := float64(c1-c0) / t1.Sub(t0).Seconds()
	fmt.Printf("%-30s %12.0f pps  %8.1f Mb/s (60-byte packets)\n", title, rate, rate*60*8/1e6)
	out := sample{pps: rate, rxNs: -1}
	if r0 != nil && r1 != nil && c1 > c0 {
		ns, _, err := r1.Since(*r0, allCPUs(), softirq.NetRX)
		if err != nil {
			fail(err)
		}
		out.rxNs = float64(ns) / float64(c1-c0)
	}
	return out
}

// readIRQ reads the softirq counter, nil without one.
func (b *bench) readIRQ() *softirq.Reading {
	if b.irq == nil {
		return nil
	}
	r, err := b.irq.Read()
	if err != nil {
		fail(err)
	}
	return &r
}

func allCPUs() []int {
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

// runLive sends with the live-frame engine: the receiver's XDP program
// gives its veth the NAPI instance XDP frames go to.
func (b *bench) runLive(ctx context.Context) error {
	job := engine.Job{Sender: b.run.Node("tx").NS, Interface: "t0", Duration: time.Hour, Frame: 64,
		DstIP: b.l.Node("rx").Interface("r0").Addresses[0].Addr(), DstMAC: b.l.Node("rx").Interface("r0").MAC}
	_, err := userspace.XDP{}.Run(ctx, job)
	return err
}

func (b *bench) runOurs(ctx context.Context, threads int) error { return b.runFlows(ctx, threads, 0) }

// runFlows is runOurs with flows concurrent flows, one source port each
// (as a lab file's flows: gives them).
func (b *bench) runFlows(ctx context.Context, threads, flows int) error {
	job := engine.Job{Sender: b.run.Node("tx").NS, Interface: "t0", Duration: time.Hour, Frame: 64, Threads: threads,
		DstIP: b.l.Node("rx").Interface("r0").Addresses[0].Addr(), DstMAC: b.l.Node("rx").Interface("r0").MAC}
	if flows > 1 {
		job.Flows, job.UDPSrc = flows, engine.PortRange{Min: spec.FlowPortBase, Max: spec.FlowPortBase + flows - 1}
	}
	job.Options = map[string]string{}
	if v := os.Getenv("NSLAB_BATCH"); v != "" {
		job.Options["batch"] = v
	}
	_, err := userspace.Engine{}.Run(ctx, job)
	return err
}

// trafgenConf is the same packet as ours: Ethernet, IPv4 (TTL 32), UDP
// 9 -> 9, 18 bytes of payload: a 60-byte packet, 64 bytes with FCS.
const trafgenConf = `{
  eth(da=02:00:00:99:00:02, sa=02:00:00:99:00:01),
  ipv4(saddr=10.99.0.1, daddr=10.99.0.2, ttl=32),
  udp(sp=9, dp=9),
  fill(0x00, 18)
}
`

func (b *bench) runTrafgen(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "trafgen-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: best effort
	conf := filepath.Join(dir, "udp64.cfg")
	if err := os.WriteFile(conf, []byte(trafgenConf), 0o644); err != nil {
		return err
	}
	cmd := exec.Command("ip", "netns", "exec", b.l.Namespace("tx"), "trafgen", "-o", "t0", "-i", conf, "-P", "1", "-C", "-Q")
	cmd.Stdout, cmd.Stderr = nil, os.Stderr
	// trafgen forks its senders: stop the whole process group, as Ctrl-C would.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		return fmt.Errorf("stop trafgen: %w", err)
	}
	return cmd.Wait()
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-engine:", err)
	os.Exit(1)
}
