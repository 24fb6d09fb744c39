package userspace

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// XDPName is how results name the live-frame engine.
const XDPName = "userspace (XDP live frames)"

// XDP sends with the kernel's XDP live-frame mode (BPF_PROG_RUN with
// BPF_F_TEST_XDP_LIVE_FRAMES, Linux 5.18; xdp-trafficgen's method): the
// kernel runs a small XDP program on frames it makes from one template
// and transmits them with the device's ndo_xdp_xmit. No socket and no skb
// on the sender's side: it costs the sender a fraction of what AF_PACKET
// does (make bench-engine). The device must take XDP frames: a veth whose
// peer runs an XDP program or has GRO on (either gives the peer the NAPI
// instance the frames go to); the engine sends a probe first and says so
// when it does not. It sends one frame size, one flow (no ranges, flows or
// mixes: those need Engine), with pktgen's sequence numbers and
// timestamps. It implements engine.Engine.
type XDP struct{}

var _ engine.Engine = XDP{}

// Name implements engine.Engine.
func (XDP) Name() string { return XDPName }

// xdpOptions are the options the live-frame engine takes:
//
//	pin=true  pin thread i to CPU i
var xdpOptions = []string{"pin"}

// Run implements engine.Engine: it sends the job from the sender's
// namespace, one locked OS thread and one program per thread.
func (XDP) Run(ctx context.Context, j engine.Job) (*engine.Result, error) {
	cfg, err := checkXDP(j)
	if err != nil {
		return nil, err
	}
	n := j.Sender
	link, src, err := senderInterface(n, j)
	if err != nil {
		return nil, err
	}
	if mtu := link.Attrs().MTU; j.Frame > mtu+ethLen+fcs {
		return nil, fmt.Errorf("XDP engine: frame %d bytes exceeds what MTU %d of %s carries (%d)", j.Frame, mtu, j.Interface, mtu+ethLen+fcs)
	}
	g, err := newLiveGen(j, link.Attrs().HardwareAddr, src)
	if err != nil {
		return nil, err
	}
	defer g.close()
	h, err := n.NetlinkHandle()
	if err != nil {
		return nil, err
	}
	defer h.Close()
	if err := g.probe(n, h, j.Interface, link.Attrs().Index, j.Count); err != nil {
		return nil, fmt.Errorf("XDP engine in %s: %w", n.Name, err)
	}
	dropped := func() (uint64, error) {
		l, err := nlsafe.LinkByName(h, j.Interface)
		if err != nil {
			return 0, fmt.Errorf("read %s's counters in %s: %w", j.Interface, n.Name, err)
		}
		return l.Attrs().Statistics.TxDropped, nil
	}
	drop0, err := dropped()
	if err != nil {
		return nil, err
	}
	senders := newLiveSenders(j, cfg, g, n, link.Attrs().Index)
	errs := make([]error, len(senders))
	var wg sync.WaitGroup
	for i, s := range senders {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.run(ctx) }()
	}
	wg.Wait()
	errs = append(errs, countDropped(senders, drop0, dropped))
	plain := make([]*sender, len(senders))
	for i, s := range senders {
		plain[i] = &s.sender
	}
	res := summarize(j, plain)
	res.Engine = XDPName
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("XDP engine in %s: %w", n.Name, err)
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("XDP engine run in %s stopped: %w", n.Name, ctx.Err())
	}
	return res, nil
}

// newLiveSenders makes the job's threads, each with its program slot,
// pinned as Engine's are.
func newLiveSenders(j engine.Job, cfg config, g *liveGen, n *ns.NS, ifindex int) []*liveSender {
	senders := make([]*liveSender, j.ThreadCount())
	for i := range senders {
		s := &liveSender{g: g, slot: uint32(i), ifindex: ifindex, ns: n,
			sender: sender{count: j.Count, dur: j.Duration, cpu: -1}}
		switch {
		case len(j.CPUs) > 0:
			s.cpu = j.CPUs[i]
		case cfg.pin:
			s.cpu = i % runtime.NumCPU()
		}
		senders[i] = s
	}
	return senders
}

// countDropped moves the device's drops over the run (its peer's ring was
// full: handed and not delivered, the AF_PACKET engine's errors) from sent
// to errors. They are the device's, not a thread's: the first thread
// carries them.
func countDropped(senders []*liveSender, drop0 uint64, dropped func() (uint64, error)) error {
	drop1, err := dropped()
	if err != nil {
		return err
	}
	if d := min(drop1-drop0, senders[0].sent); d > 0 {
		senders[0].sent -= d
		senders[0].errs += d
	}
	return nil
}

// checkXDP validates the job for the live-frame engine: Engine's checks,
// and what one template frame cannot carry.
func checkXDP(j engine.Job) (config, error) {
	var p []string
	var c config
	for k, v := range j.Options {
		switch k {
		case "pin":
			c.pin = v == "true" || v == "1"
		default:
			p = append(p, fmt.Sprintf("option %s is not one the XDP engine can honour (it takes %s)", k, strings.Join(xdpOptions, ", ")))
		}
	}
	plainJob := j
	plainJob.Options = nil
	base, err := check(plainJob)
	if err != nil {
		p = append(p, strings.TrimPrefix(err.Error(), "userspace engine: "))
	}
	if base.gap > 0 {
		p = append(p, "a rate: the kernel's live-frame mode sends each call's frames as fast as the device takes them, and a call costs it about 25 ms, too much to pace by; use engine userspace")
	}
	add := func(cond bool, what string) {
		if cond {
			p = append(p, what+" needs a packet of its own each time: use engine userspace")
		}
	}
	add(j.FrameMax > j.Frame || len(j.Mix) > 0, "a frame size range or mix")
	add(j.DstIPMax.IsValid() || j.SrcIPMax.IsValid(), "an address range")
	add(j.UDPSrc.Max > j.UDPSrc.Min || j.UDPDst.Max > j.UDPDst.Min, "a port range")
	add(j.Flows > 1, "flows")
	if len(p) > 0 {
		return c, fmt.Errorf("XDP engine: %s", strings.Join(p, "; "))
	}
	return c, nil
}

// liveGen is a live-frame run's template and programs, one per thread.
type liveGen struct {
	template []byte
	counts   *ebpf.Map
	progs    []*ebpf.Program
}

// newLiveGen builds the template (the AF_PACKET engine's first packet)
// and loads one program per thread, each counting in its own slot.
func newLiveGen(j engine.Job, srcMAC []byte, src netip.Addr) (*liveGen, error) {
	b := newBuilder(j, srcMAC, src, 0)
	buf := make([]byte, b.maxLen())
	size := b.fill(buf, time.Now())
	l := stampLayout{csum: ethLen + ipv4Len + 6, pg: ethLen + ipv4Len + udpLen, frameLen: size}
	if b.v6 {
		l.csum, l.pg = ethLen+ipv6Len+6, ethLen+ipv6Len+udpLen
	}
	l.ns = size >= l.pg+pgHdrLen+nsLen
	l.head = buf[:l.csum-6] // Ethernet and IP, up to the UDP header
	off, err := taiOffset()
	if err != nil {
		return nil, err
	}
	threads := j.ThreadCount()
	counts, err := ebpf.NewMap(&ebpf.MapSpec{Name: "nslab_live_n", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: uint32(threads)})
	if err != nil {
		return nil, fmt.Errorf("XDP engine: counters: %w", err)
	}
	g := &liveGen{template: buf[:size], counts: counts}
	for i := range threads {
		p, err := loadLive(counts, uint32(i), engine.FirstSeq, off, l)
		if err != nil {
			g.close()
			return nil, err
		}
		g.progs = append(g.progs, p)
	}
	return g, nil
}

func (g *liveGen) close() {
	for _, p := range g.progs {
		_ = p.Close() // a program that will not close goes with the process
	}
	_ = g.counts.Close()
}

// taiOffset is CLOCK_TAI less CLOCK_REALTIME, in whole seconds as the
// kernel keeps it (0 where no leap second table was set).
func taiOffset() (int64, error) {
	var tai, real unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_TAI, &tai); err != nil {
		return 0, fmt.Errorf("CLOCK_TAI: %w", err)
	}
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &real); err != nil {
		return 0, fmt.Errorf("CLOCK_REALTIME: %w", err)
	}
	d := tai.Nano() - real.Nano()
	return (d + 5e8) / 1e9 * 1e9, nil
}

// sent is slot's count of frames the program has sent.
func (g *liveGen) sent(slot uint32) (uint64, error) {
	var v uint64
	if err := g.counts.Lookup(slot, &v); err != nil {
		return 0, fmt.Errorf("read the XDP engine's count: %w", err)
	}
	return v, nil
}

// run runs slot's program on n frames, transmitted on ifindex. It runs on
// the calling thread, which must be inside the device's namespace: the
// kernel looks the device up there.
func (g *liveGen) run(slot uint32, ifindex, n int) error {
	_, err := g.progs[slot].Run(&ebpf.RunOptions{
		Data:      g.template,
		Context:   &xdpMd{DataEnd: uint32(len(g.template)), IngressIfindex: uint32(ifindex)},
		Repeat:    uint32(n),
		Flags:     unix.BPF_F_TEST_XDP_LIVE_FRAMES,
		BatchSize: uint32(min(n, 256)),
	})
	if err != nil {
		if refused := refusal(err); refused != nil {
			return refused
		}
		return fmt.Errorf("run the XDP generator: %w", err)
	}
	return nil
}

// xdpMd is struct xdp_md, the context a run gives the program.
type xdpMd struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// probeFrames is how many frames the probe sends.
const probeFrames = 8

// probe sends the run's first frames (at most its count) and checks that
// the device delivered them: a veth drops XDP frames without a counter
// when its peer has no NAPI instance. It runs the program on a thread
// inside n and reads the device's counters through h, a handle in n.
func (g *liveGen) probe(n *ns.NS, h *netlink.Handle, dev string, ifindex int, count uint64) error {
	frames := probeFrames
	if count > 0 {
		frames = int(min(count, probeFrames))
	}
	l, err := nlsafe.LinkByName(h, dev)
	if err != nil {
		return err
	}
	tx0 := l.Attrs().Statistics.TxPackets
	if err := n.Do(func() error { return g.run(0, ifindex, frames) }); err != nil {
		return err
	}
	if l, err = nlsafe.LinkByName(h, dev); err != nil {
		return err
	}
	if got := l.Attrs().Statistics.TxPackets - tx0; got < uint64(frames) {
		return fmt.Errorf("%s delivered %d of %d XDP frames: its peer must run an XDP program or have GRO on (nslab exec NODE -- ethtool -K PEER gro on), or use engine userspace", dev, got, frames)
	}
	return nil
}

// liveSender is one thread of a live-frame run: Engine's sender counts,
// its own program slot.
type liveSender struct {
	sender
	g       *liveGen
	slot    uint32
	ifindex int
	ns      *ns.NS
}

// The kernel's live-frame mode costs about 25 ms a call here (measured on
// a veth pair: 30 us for one frame, 24-28 ms for 64 to 4096), so a thread
// sends in calls that last callTime at the rate it measured: cancel takes
// effect within about a call, and a count or duration ends exactly.
const (
	callTime   = 50 * time.Millisecond
	firstCall  = 1 << 14
	largestRun = 1 << 24
)

// run sends until count, duration or cancel on a locked OS thread inside
// the sender's namespace (pinned when asked), as fast as the device takes
// the frames.
func (s *liveSender) run(ctx context.Context) error {
	return s.ns.Do(func() error {
		if s.cpu >= 0 {
			var set unix.CPUSet
			set.Set(s.cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				return fmt.Errorf("pin to CPU %d: %w", s.cpu, err)
			}
			defer unpin()
		}
		s.first = time.Now()
		var end time.Time
		if s.dur > 0 {
			end = s.first.Add(s.dur)
		}
		defer func() { s.sent, _ = s.g.sent(s.slot) }()
		n, rate := firstCall, 0.0
		for {
			now := time.Now()
			if ctx.Err() != nil || (!end.IsZero() && !now.Before(end)) {
				return nil
			}
			handed, err := s.g.sent(s.slot)
			if err != nil {
				return err
			}
			if rate > 0 {
				n = int(min(max(rate*callTime.Seconds(), 1), largestRun))
				if !end.IsZero() {
					n = int(min(float64(n), max(rate*end.Sub(now).Seconds(), 1)))
				}
			}
			if s.count > 0 {
				if handed >= s.count {
					return nil
				}
				n = int(min(uint64(n), s.count-handed))
			}
			if err := s.g.run(s.slot, s.ifindex, n); err != nil {
				return err
			}
			s.last = time.Now()
			rate = float64(n) / s.last.Sub(now).Seconds()
		}
	})
}

// unpin lets the thread run on every CPU again before it goes back to the
// runtime.
func unpin() {
	var set unix.CPUSet
	for i := range runtime.NumCPU() {
		set.Set(i)
	}
	_ = unix.SchedSetaffinity(0, &set) // best effort: the thread runs on, pinned
}
