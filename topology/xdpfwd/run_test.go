package xdpfwd_test

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/spec"
	"github.com/nslab/nslab/topology/xdpfwd"
	"github.com/vishvananda/netlink"
)

// dualLab is client a, router r with the XDP fast path, server b, in
// IPv4 and IPv6.
const dualLab = `name: x
nodes:
  a:
    interfaces:
      e0: {addresses: [10.7.1.1/24, "fd07:1::1/64"]}
    routes: [{to: default, via: 10.7.1.254}, {to: "::/0", via: "fd07:1::fe"}]
  r:
    forwarding: {ipv4: true, ipv6: true, fastpath: xdp}
    interfaces:
      e0: {addresses: [10.7.1.254/24, "fd07:1::fe/64"]}
      e1: {addresses: [10.7.2.254/24, "fd07:2::fe/64"]}
  b:
    interfaces:
      e0: {addresses: [10.7.2.1/24, "fd07:2::1/64"]}
    routes: [{to: default, via: 10.7.2.254}, {to: "::/0", via: "fd07:2::fe"}]
links:
  - endpoints: [a:e0, r:e0]
  - endpoints: [r:e1, b:e0]
`

// The kernel's XDP actions (enum xdp_action).
const (
	xdpDrop     = 1
	xdpPass     = 2
	xdpRedirect = 4
)

// xdpMD is struct xdp_md, the context BPF_PROG_TEST_RUN takes: the frame
// enters on IngressIfindex (data and data_end are the frame's bounds).
type xdpMD struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// tryRig runs the router's attached program on crafted frames, as if
// they came in on its e0, in the router's namespace.
type tryRig struct {
	t      *testing.T
	r      *lab.Running
	prog   *ebpf.Program
	e0     int
	aMAC   net.HardwareAddr
	r0MAC  net.HardwareAddr
	r1MAC  net.HardwareAddr
	bMAC   net.HardwareAddr
	router *deployed.Node
}

func newTryRig(t *testing.T, r *lab.Running) *tryRig {
	t.Helper()
	link := func(node, name string) netlink.Link {
		l, err := r.Link(spec.Endpoint{Node: node, Interface: name})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	e0 := link("r", "e0")
	x := e0.Attrs().Xdp
	if x == nil || x.ProgId == 0 {
		t.Fatalf("r:e0 has no XDP program: %+v", x)
	}
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(x.ProgId))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prog.Close() })
	return &tryRig{t: t, r: r, prog: prog, e0: e0.Attrs().Index, router: r.Node("r"),
		aMAC: link("a", "e0").Attrs().HardwareAddr, r0MAC: e0.Attrs().HardwareAddr,
		r1MAC: link("r", "e1").Attrs().HardwareAddr, bMAC: link("b", "e0").Attrs().HardwareAddr}
}

// run runs the program on frame, from a thread in the router's namespace
// (where the kernel looks up the ingress interface and the FIB), and
// returns its action, the frame as it left, and which counter it moved.
// The lab's own frames (a node's MLD reports, hop limit 1, its router
// solicitations) cross e0 now and then and move its counters too: a try
// that saw more than the one frame is made again. A program that counts
// one frame twice fails every try.
func (g *tryRig) run(frame []byte) (uint32, []byte, string) {
	g.t.Helper()
	var moves []uint64
	for try := 0; try < 5; try++ {
		var action uint32
		var out []byte
		action, out, moves = g.runOnce(frame)
		moved, ok := oneMove(moves)
		if ok {
			return action, out, moved
		}
		g.t.Logf("try %d: the counters moved by %v", try+1, moves)
		time.Sleep(200 * time.Millisecond)
	}
	g.t.Fatalf("one frame moved the counters by %v in each of 5 tries", moves)
	return 0, nil, ""
}

// oneMove names the counter moved when exactly one moved, by one (or
// none, "").
func oneMove(moves []uint64) (string, bool) {
	moved := ""
	for i, n := range moves {
		if n != 0 {
			if moved != "" || n != 1 {
				return "", false
			}
			moved = xdpfwd.Reasons[i]
		}
	}
	return moved, true
}

// runOnce runs the program once on frame and returns how far it moved
// each counter of e0.
func (g *tryRig) runOnce(frame []byte) (uint32, []byte, []uint64) {
	g.t.Helper()
	before, err := xdpfwd.Read(g.router.Handle, g.e0)
	if err != nil {
		g.t.Fatal(err)
	}
	out := make([]byte, len(frame))
	var action uint32
	err = g.router.NS.Do(func() error {
		var err error
		action, err = g.prog.Run(&ebpf.RunOptions{Data: frame, DataOut: out,
			Context: xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(g.e0)}})
		return err
	})
	if err != nil {
		g.t.Fatal(err)
	}
	after, err := xdpfwd.Read(g.router.Handle, g.e0)
	if err != nil {
		g.t.Fatal(err)
	}
	return action, out, after.Sub(before)
}

// frame4 is an Ethernet frame from a to r carrying an IPv4 UDP datagram;
// edit may change the IP header before it is serialised.
func (g *tryRig) frame4(dst string, ttl uint8, edit func(*layers.IPv4)) []byte {
	ip := &layers.IPv4{Version: 4, TTL: ttl, Protocol: layers.IPProtocolUDP,
		SrcIP: net.ParseIP("10.7.1.1").To4(), DstIP: net.ParseIP(dst).To4()}
	if edit != nil {
		edit(ip)
	}
	udp := &layers.UDP{SrcPort: 5000, DstPort: 9}
	_ = udp.SetNetworkLayerForChecksum(ip)
	return g.serialise(&layers.Ethernet{SrcMAC: g.aMAC, DstMAC: g.r0MAC, EthernetType: layers.EthernetTypeIPv4}, ip, udp)
}

// frame6 is frame4 in IPv6.
func (g *tryRig) frame6(src, dst string, hops uint8, next layers.IPProtocol) []byte {
	ip := &layers.IPv6{Version: 6, HopLimit: hops, NextHeader: next, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	eth := &layers.Ethernet{SrcMAC: g.aMAC, DstMAC: g.r0MAC, EthernetType: layers.EthernetTypeIPv6}
	if next == layers.IPProtocolIPv6HopByHop {
		hbh := &layers.IPv6HopByHop{}
		hbh.NextHeader = layers.IPProtocolUDP
		hbh.Options = []*layers.IPv6HopByHopOption{{OptionType: 1, OptionLength: 4, OptionData: make([]byte, 4)}}
		return g.serialise(eth, ip, hbh, gopacket.Payload(make([]byte, 8)))
	}
	udp := &layers.UDP{SrcPort: 5000, DstPort: 9}
	_ = udp.SetNetworkLayerForChecksum(ip)
	return g.serialise(eth, ip, udp)
}

func (g *tryRig) serialise(ls ...gopacket.SerializableLayer) []byte {
	g.t.Helper()
	buf := gopacket.NewSerializeBuffer()
	ls = append(ls, gopacket.Payload(make([]byte, 18)))
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		g.t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPrivilegedProgramRun runs the fast path's program through
// BPF_PROG_TEST_RUN on crafted frames in a deployed router: a frame it
// can forward leaves redirected with the next hop's MACs, its TTL (hop
// limit) one less and a valid header checksum; each case it cannot
// forward is passed to the stack under its own counter. Before, IPv4
// and IPv6 pings cross the router through the program.
func TestPrivilegedProgramRun(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	l := labdeploy.Deploy(t, labtest.Rename([]byte(dualLab), labtest.Name("x")))
	r := labdeploy.Open(t, l)
	g := newTryRig(t, r)
	for _, dst := range []string{"10.7.2.1", "fd07:2::1"} {
		if got, err := labtest.Ping(r.Dir, l.Namespace("a"), netip.MustParseAddr(dst), 5, time.Second); err != nil || got != 5 {
			t.Fatalf("ping %s through the XDP router: %d of 5 (%v)", dst, got, err)
		}
	}
	c, err := xdpfwd.ReadNode(g.router.NS)
	// 20 crossings: each family's first request finds no neighbour yet
	// and goes through the stack, which resolves it.
	if err != nil || c == nil || c.Forwarded() < 18 {
		t.Fatalf("after 5 pings each way in IPv4 and IPv6: counters %v (%v), want at least 18 forwarded", c, err)
	}
	t.Run("forward IPv4", func(t *testing.T) {
		in := g.frame4("10.7.2.1", 64, nil)
		action, out, moved := g.run(in)
		if action != xdpRedirect || moved != "forwarded" {
			t.Fatalf("action %d, counter %q", action, moved)
		}
		g.wantRewritten(t, in, out)
		if out[14+8] != 63 || labtest.Checksum(out[14:34]) != 0 {
			t.Errorf("TTL %d, header checksum %#04x (want 63, valid)", out[22], binary.BigEndian.Uint16(out[24:26]))
		}
	})
	t.Run("forward IPv6", func(t *testing.T) {
		in := g.frame6("fd07:1::1", "fd07:2::1", 64, layers.IPProtocolUDP)
		action, out, moved := g.run(in)
		if action != xdpRedirect || moved != "forwarded" {
			t.Fatalf("action %d, counter %q", action, moved)
		}
		g.wantRewritten(t, in, out)
		if out[14+7] != 63 {
			t.Errorf("hop limit %d, want 63", out[21])
		}
	})
	g.notInMap(t)
	arp := g.serialise(&layers.Ethernet{SrcMAC: g.aMAC, DstMAC: layers.EthernetBroadcast, EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4, Operation: 1,
			SourceHwAddress: g.aMAC, SourceProtAddress: []byte{10, 7, 1, 1}, DstHwAddress: make([]byte, 6), DstProtAddress: []byte{10, 7, 1, 254}})
	for _, c := range []struct {
		name   string
		frame  []byte
		action uint32
		reason string
	}{
		{"ARP", arp, xdpPass, "passed: not IP (ARP, VLAN, ...)"},
		{"TTL 1", g.frame4("10.7.2.1", 1, nil), xdpPass, "passed: TTL or hop limit 1"},
		{"hop limit 1", g.frame6("fd07:1::1", "fd07:2::1", 1, layers.IPProtocolUDP), xdpPass, "passed: TTL or hop limit 1"},
		{"IPv4 options", g.frame4("10.7.2.1", 64, func(ip *layers.IPv4) {
			ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
		}), xdpPass, "passed: IPv4 options or a fragment, IPv6 hop-by-hop"},
		{"fragment", g.frame4("10.7.2.1", 64, func(ip *layers.IPv4) { ip.Flags = layers.IPv4MoreFragments }), xdpPass, "passed: IPv4 options or a fragment, IPv6 hop-by-hop"},
		{"hop-by-hop", g.frame6("fd07:1::1", "fd07:2::1", 64, layers.IPProtocolIPv6HopByHop), xdpPass, "passed: IPv4 options or a fragment, IPv6 hop-by-hop"},
		{"to the router", g.frame4("10.7.1.254", 64, nil), xdpPass, "passed: to the node itself"},
		{"no neighbour", g.frame4("10.7.2.77", 64, nil), xdpPass, "passed: no neighbour entry yet"},
		{"blackhole", g.frame4("198.51.100.1", 64, nil), xdpPass, "passed: no route, blackhole, unreachable, prohibited or forwarding off"},
		{"link-local", g.frame6("fd07:1::1", "fe80::1", 64, layers.IPProtocolUDP), xdpPass, "passed: IPv6 link-local or multicast"},
		{"multicast", g.frame6("fe80::1", "ff02::1", 64, layers.IPProtocolUDP), xdpPass, "passed: IPv6 link-local or multicast"},
		{"truncated", g.frame4("10.7.2.1", 64, nil)[:24], xdpDrop, "dropped: shorter than its headers"},
	} {
		if c.name == "blackhole" {
			g.blackhole(t, "198.51.100.0/24")
		}
		action, _, moved := g.run(c.frame)
		if action != c.action || moved != c.reason {
			t.Errorf("%s: action %d counted %q, want %d counted %q", c.name, action, moved, c.action, c.reason)
		}
	}
}

// wantRewritten: out is in with the router's e1 as source MAC and b's
// as destination.
func (g *tryRig) wantRewritten(t *testing.T, in, out []byte) {
	t.Helper()
	if net.HardwareAddr(out[0:6]).String() != g.bMAC.String() || net.HardwareAddr(out[6:12]).String() != g.r1MAC.String() {
		t.Errorf("MACs %s -> %s, want %s -> %s", net.HardwareAddr(out[6:12]), net.HardwareAddr(out[0:6]), g.r1MAC, g.bMAC)
	}
	if len(out) != len(in) {
		t.Errorf("length %d, want %d", len(out), len(in))
	}
}

// blackhole adds a blackhole route in the router (the lab goes with the
// test).
func (g *tryRig) blackhole(t *testing.T, to string) {
	t.Helper()
	_, dst, _ := net.ParseCIDR(to)
	if err := g.router.Handle.RouteAdd(&netlink.Route{Dst: dst, Type: 6 /* RTN_BLACKHOLE */}); err != nil {
		t.Fatal(err)
	}
}

// notInMap: a route by an interface the program does not redirect to (a
// veth pair made in the router after deploy, with a neighbour entry) is
// passed to the stack.
func (g *tryRig) notInMap(t *testing.T) {
	t.Helper()
	h := g.router.Handle
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "nm0"}, PeerName: "nm1"}
	if err := h.LinkAdd(v); err != nil {
		t.Fatal(err)
	}
	nm, err := h.LinkByName("nm0")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := netlink.ParseAddr("10.7.9.254/24")
	peer, _ := net.ParseMAC("02:00:00:00:09:01")
	for _, err := range []error{h.LinkSetUp(nm), h.AddrAdd(nm, addr),
		h.NeighAdd(&netlink.Neigh{LinkIndex: nm.Attrs().Index, IP: net.ParseIP("10.7.9.1"), HardwareAddr: peer, State: netlink.NUD_PERMANENT})} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if peerLink, err := h.LinkByName("nm1"); err == nil {
		_ = h.LinkSetUp(peerLink)
	}
	action, _, moved := g.run(g.frame4("10.7.9.1", 64, nil))
	if action != xdpPass || moved != "passed: leaves by an interface the program does not redirect to" {
		t.Errorf("not in the devmap: action %d counted %q", action, moved)
	}
}
