package userspace

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/pktgen/engine"
	"github.com/nslab/nslab/topology/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Name is how results name this engine.
const Name = "userspace (AF_PACKET)"

// Engine sends with AF_PACKET sockets from userspace. It implements
// engine.Engine.
type Engine struct{}

var _ engine.Engine = Engine{}

// Name implements engine.Engine.
func (Engine) Name() string { return Name }

// options are the engine options this engine takes:
//
//	qdisc=bypass|through  skip the qdisc (default, as pktgen) or go through it
//	batch=N               packets per system call (default 256)
//	pin=true              pin thread i to CPU i (the job's CPUs pin them where it has some)
var options = []string{"qdisc", "batch", "pin"}

// config is a job checked and resolved for sending.
type config struct {
	bypass bool
	batch  int
	pin    bool
	gap    time.Duration
}

// check validates the job for this engine and reads its options. It refuses
// what the engine cannot honour rather than ignoring it.
func check(j engine.Job) (config, error) {
	c, p := readOptions(j.Options)
	p = append(p, checkJob(j)...)
	pps := j.RatePPS
	if mean := j.MeanFrame(); j.RateMbps > 0 && mean > fcs {
		pps = uint64(float64(j.RateMbps) * 1e6 / ((mean - fcs) * 8))
	}
	if pps > 0 {
		c.gap = time.Second / time.Duration(pps)
	}
	if len(p) > 0 {
		return c, fmt.Errorf("userspace engine: %s", strings.Join(p, "; "))
	}
	return c, nil
}

// readOptions reads the engine's options, and names the ones it refuses.
func readOptions(opts map[string]string) (config, []string) {
	c := config{bypass: true, batch: 256}
	var p []string
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := opts[k]
		switch k {
		case "qdisc":
			if v != "bypass" && v != "through" {
				p = append(p, fmt.Sprintf("qdisc=%s: use bypass or through", v))
			}
			c.bypass = v != "through"
		case "batch":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1024 {
				p = append(p, fmt.Sprintf("batch=%s: use 1..1024", v))
			}
			c.batch = n
		case "pin":
			c.pin = v == "true" || v == "1"
		default:
			p = append(p, fmt.Sprintf("option %s is not one the userspace engine can honour (it takes %s)", k, strings.Join(options, ", ")))
		}
	}
	return c, p
}

// checkJob names what of the job this engine cannot send as asked.
func checkJob(j engine.Job) []string {
	var p []string
	add := func(cond bool, msg string) {
		if cond {
			p = append(p, msg)
		}
	}
	add(j.Count == 0 && j.Duration <= 0, "set a count or a duration: with neither the run never ends")
	add(!j.DstIP.IsValid(), "no destination address")
	add(len(j.DstMAC) != 6, "no destination MAC: give the next hop's MAC")
	v6 := j.DstIP.Is6()
	minFrame := engine.MinFrame(v6)
	add(j.Frame < minFrame, fmt.Sprintf("frame %d bytes is below the minimum of %d (L2 frame including FCS)", j.Frame, minFrame))
	add(j.FrameMax != 0 && j.FrameMax < j.Frame, "frame range: smallest first")
	for _, a := range []netip.Addr{j.DstIPMax, j.SrcIP, j.SrcIPMax} {
		add(a.IsValid() && a.Is6() != v6, fmt.Sprintf("%s and destination %s are of different IP versions", a, j.DstIP))
	}
	for _, r := range [][2]netip.Addr{{j.DstIP, j.DstIPMax}, {j.SrcIP, j.SrcIPMax}} {
		add(r[1].IsValid() && r[0].IsValid() && (r[1].Less(r[0]) || !samePrefix96(r[0], r[1])),
			fmt.Sprintf("address range %s-%s: smallest first, differing in the last 32 bits only", r[0], r[1]))
	}
	for _, r := range []engine.PortRange{j.UDPSrc, j.UDPDst} {
		add(r.Min < 0 || r.Max > 65535 || (r.Max != 0 && r.Max < r.Min), fmt.Sprintf("UDP port range %d-%d: ports 0..65535, smallest first", r.Min, r.Max))
	}
	add(j.Flows < 0 || j.Flows > 65535 || j.FlowLen < 0, "flows must be 0..65535 and flowlen positive")
	add(j.RatePPS > 0 && j.RateMbps > 0, "give the rate in pps or in Mbps, not both")
	return p
}

func samePrefix96(a, b netip.Addr) bool {
	x, y := a.As16(), b.As16()
	return [12]byte(x[:12]) == [12]byte(y[:12])
}

// Run implements engine.Engine: it sends the job from the sender's
// namespace, one socket and one locked OS thread per thread.
func (e Engine) Run(ctx context.Context, j engine.Job) (*engine.Result, error) {
	cfg, err := check(j)
	if err != nil {
		return nil, err
	}
	n := j.Sender
	link, src, err := senderInterface(n, j)
	if err != nil {
		return nil, err
	}
	if mtu := link.Attrs().MTU; max(j.Frame, j.FrameMax) > mtu+ethLen+fcs {
		return nil, fmt.Errorf("userspace engine: frame %d bytes exceeds what MTU %d of %s carries (%d)", max(j.Frame, j.FrameMax), mtu, j.Interface, mtu+ethLen+fcs)
	}
	threads := j.ThreadCount()
	fds := make([]int, 0, threads)
	// Closing a packet socket waits for an RCU grace period (several ms
	// on a busy machine); nothing is sent by then, so the run does not
	// wait for it.
	defer func() {
		go func() {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}()
	}()
	// Sockets belong to the namespace they are opened in: open them there.
	err = n.Do(func() error {
		for i := 0; i < threads; i++ {
			fd, err := openSocket(link.Attrs().Index, cfg.bypass)
			if err != nil {
				return err
			}
			fds = append(fds, fd)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("in %s: %w", n.Name, err)
	}
	senders := make([]*sender, threads)
	for i := range senders {
		senders[i] = &sender{fd: fds[i], ifindex: link.Attrs().Index, b: newBuilder(j, link.Attrs().HardwareAddr, src, i),
			batch: cfg.batch, count: j.Count, dur: j.Duration, gap: cfg.gap, cpu: -1}
		switch {
		case len(j.CPUs) > 0:
			senders[i].cpu = j.CPUs[i]
		case cfg.pin:
			senders[i].cpu = i % runtime.NumCPU()
		}
	}
	errs := make([]error, threads)
	var wg sync.WaitGroup
	for i, s := range senders {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.run(ctx) }()
	}
	wg.Wait()
	res := summarize(j, senders)
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("userspace engine in %s: %w", n.Name, err)
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("userspace engine run in %s stopped: %w", n.Name, ctx.Err())
	}
	return res, nil
}

// senderInterface reads the sender interface and picks the source address: the
// job's, or the interface's first address of the destination's family.
func senderInterface(n *ns.NS, j engine.Job) (netlink.Link, netip.Addr, error) {
	h, err := n.NetlinkHandle()
	if err != nil {
		return nil, netip.Addr{}, err
	}
	defer h.Close()
	link, err := nlsafe.LinkByName(h, j.Interface)
	if err != nil {
		return nil, netip.Addr{}, fmt.Errorf("sender interface %s in %s: %w", j.Interface, n.Name, err)
	}
	if j.SrcIP.IsValid() {
		return link, j.SrcIP, nil
	}
	family := netlink.FAMILY_V4
	if j.DstIP.Is6() {
		family = netlink.FAMILY_V6
	}
	addrs, err := nlsafe.AddrList(h, link, family)
	if err != nil {
		return nil, netip.Addr{}, fmt.Errorf("addresses of %s: %w", j.Interface, err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok && !ip.IsLinkLocalUnicast() {
			return link, ip.Unmap(), nil
		}
	}
	return nil, netip.Addr{}, fmt.Errorf("sender interface %s has no address to send from: give a source address", j.Interface)
}

// newBuilder makes thread i's packet builder.
func newBuilder(j engine.Job, ifMAC net.HardwareAddr, src netip.Addr, i int) *builder {
	b := &builder{dstMAC: j.DstMAC, srcMAC: ifMAC, v6: j.DstIP.Is6(), flows: j.Flows, flowLen: j.FlowLen, seq: engine.FirstSeq,
		rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))}
	if j.SrcMAC != nil {
		b.srcMAC = j.SrcMAC
	}
	b.sizes = span{lo: uint32(j.Frame), hi: uint32(max(j.Frame, j.FrameMax))}
	b.mix = mixCycle(j.Mix)
	b.dst = newAddrSpan(j.DstIP, j.DstIPMax)
	srcMax := j.SrcIPMax
	if !j.SrcIP.IsValid() {
		srcMax = netip.Addr{}
	}
	b.src = newAddrSpan(src, srcMax)
	b.srcPort = portSpan(j.UDPSrc)
	b.dstPort = portSpan(j.UDPDst)
	b.random.size, b.random.src, b.random.dst = j.Random.Size, j.Random.SrcIP, j.Random.DstIP
	b.random.srcPort, b.random.dstPort = j.Random.SrcPort, j.Random.DstPort
	return b
}

// portSpan is a UDP port range; pktgen's default port is 9.
func portSpan(r engine.PortRange) span {
	lo := r.Min
	if lo == 0 {
		lo = 9
	}
	return span{lo: uint32(lo), hi: uint32(max(lo, r.Max))}
}

// summarize turns the senders' counts into an engine result shaped like the
// kernel engine's.
func summarize(j engine.Job, senders []*sender) *engine.Result {
	res := &engine.Result{Engine: Name, Frame: j.Frame}
	for i, s := range senders {
		el := s.last.Sub(s.first)
		if s.sent == 0 || el < 0 {
			el = 0
		}
		t := engine.ThreadResult{Name: fmt.Sprintf("%s@%d", j.Interface, i), CPU: s.cpu, Sent: s.sent, Errors: s.errs, Elapsed: el, Behind: s.skipped}
		if el > 0 {
			t.PPS = float64(s.sent) / el.Seconds()
			t.Mbps = t.PPS * 8 * (j.MeanFrame() - fcs) / 1e6
		}
		res.Threads = append(res.Threads, t)
		res.Sent += t.Sent
		res.Errors += t.Errors
		res.Elapsed = max(res.Elapsed, el)
		res.Behind = max(res.Behind, s.skipped)
		res.PPS += t.PPS
		res.Mbps += t.Mbps
		if j.Count == 0 || s.sent < j.Count {
			res.Stopped = true
		}
	}
	return res
}
