package kernel

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/nslab/nslab/pktgen/engine"
)

// InvalidJob lists every problem of a job; nothing was written when it is
// returned.
type InvalidJob []string

func (e InvalidJob) Error() string {
	if len(e) == 1 {
		return "invalid pktgen job: " + e[0]
	}
	return "invalid pktgen job:\n  " + strings.Join(e, "\n  ")
}

// noSkbSharing are device kinds whose drivers clear IFF_TX_SKB_SHARING, so
// pktgen refuses clone_skb > 0 and burst > 1 on them in start_xmit mode
// (write error 524, ENOTSUPP).
var noSkbSharing = map[string]bool{
	"veth": true, "bridge": true, "vlan": true, "macvlan": true, "macvtap": true, "ipvlan": true,
	"ipvtap": true, "bond": true, "team": true, "tun": true, "vxlan": true, "geneve": true,
	"wireguard": true, "vrf": true, "netkit": true,
}

// Validate checks a job before anything is written and returns InvalidJob
// with every problem and its fix.
func (j *Job) Validate() error {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }

	switch {
	case j.Device == "":
		add("no device: name the sender interface")
	case len(j.Device) > 15 || strings.ContainsAny(j.Device, "@/ \t\n:"):
		add("device %q is not an interface name", j.Device)
	}
	if j.Threads < 0 || j.FirstThread < 0 {
		add("threads must be positive")
	}
	if len(j.CPUs) > 0 && (j.Threads > 1 || j.FirstThread > 0) {
		add("give threads or CPUs, not both: with CPUs one thread runs per CPU listed")
	}
	seen := map[int]bool{}
	for _, c := range j.CPUs {
		if c < 0 || seen[c] {
			add("CPU %d: CPU numbers must be positive and listed once (one kpktgend thread per CPU)", c)
		}
		seen[c] = true
	}
	if j.Count == 0 && j.Duration <= 0 {
		add("set a count or a duration: with neither the run never ends")
	}
	if len(j.ThreadSrcIP) > 0 && len(j.ThreadSrcIP) != j.threads() {
		add("%d per-thread source addresses for %d threads: give one per thread", len(j.ThreadSrcIP), j.threads())
	}
	p = append(p, j.validateSize()...)
	p = append(p, j.validateRate()...)
	p = append(p, j.validateXmit()...)
	p = append(p, j.validateAddresses()...)
	p = append(p, j.validateHeaders()...)
	for _, f := range j.Flags {
		if !contains(knownFlags, strings.TrimPrefix(f, "!")) {
			add("unknown flag %q: pktgen knows %s", f, strings.Join(knownFlags, ", "))
		}
	}
	if len(p) > 0 {
		return InvalidJob(p)
	}
	return nil
}

// minFrame is the smallest frame pktgen sends as asked: Ethernet's 64 bytes,
// or more when the headers and pktgen's 16-byte payload header do not fit
// (pktgen silently enlarges such packets).
func (j *Job) minFrame() int {
	return max(engine.MinFrame(j.DstIP.Is6()), engine.HeaderBytes(j.DstIP.Is6())+j.overhead())
}

// overhead is the bytes of VLAN tags and MPLS labels.
func (j *Job) overhead() int {
	o := 4 * len(j.MPLS)
	if j.VLAN != nil {
		o += 4
	}
	if j.SVLAN != nil {
		o += 4
	}
	return o
}

func (j *Job) sizes() []int {
	var s []int
	for _, f := range []int{j.Frame, j.FrameMin, j.FrameMax} {
		if f != 0 {
			s = append(s, f)
		}
	}
	for _, w := range j.IMIX {
		s = append(s, w.Frame)
	}
	return s
}

func (j *Job) validateSize() []string {
	var p []string
	kinds := 0
	if j.Frame != 0 {
		kinds++
	}
	if j.FrameMin != 0 || j.FrameMax != 0 {
		kinds++
		if j.FrameMin == 0 || j.FrameMax == 0 || j.FrameMin > j.FrameMax {
			p = append(p, fmt.Sprintf("frame range %d-%d: give both ends, smallest first", j.FrameMin, j.FrameMax))
		}
	}
	if len(j.IMIX) > 0 {
		kinds++
		if len(j.IMIX) > 100 {
			p = append(p, "imix: at most 100 sizes")
		}
		for _, w := range j.IMIX {
			if w.Weight <= 0 {
				p = append(p, fmt.Sprintf("imix weight of %d-byte frames must be positive", w.Frame))
			}
		}
	}
	if kinds > 1 {
		p = append(p, "give one of frame, a frame range, or imix weights")
	}
	lo, hi := j.minFrame(), 65535
	if j.DeviceMTU > 0 {
		hi = j.DeviceMTU + 14 + FCS + j.overhead()
	}
	for _, f := range j.sizes() {
		switch {
		case f < lo:
			p = append(p, fmt.Sprintf("frame %d bytes is below the minimum of %d (L2 frame including FCS: pkt_size %d): use at least %d", f, lo, lo-FCS, lo))
		case f > hi && j.Frags == 0:
			p = append(p, fmt.Sprintf("frame %d bytes exceeds what MTU %d carries (%d bytes): lower it or raise the MTU", f, j.DeviceMTU, hi))
		}
	}
	return p
}

func (j *Job) validateRate() []string {
	var p []string
	n := 0
	for _, set := range []bool{j.Delay > 0, j.RateMbps > 0, j.RatePPS > 0} {
		if set {
			n++
		}
	}
	if n > 1 {
		p = append(p, "give one of delay, rate (Mbps) or ratep (pps): pktgen turns each into the gap between packets")
	}
	if (j.RateMbps > 0 || j.RatePPS > 0) && len(j.sizes()) == 0 {
		p = append(p, "rate set with no frame size: pktgen derives the gap between packets from the size, so set frame too")
	}
	return p
}

func (j *Job) validateXmit() []string {
	var p []string
	mode := j.XmitMode
	switch mode {
	case "", XmitStart, XmitQueue, XmitNetifReceive:
	default:
		p = append(p, fmt.Sprintf("xmit_mode %q: use start_xmit, queue_xmit or netif_receive", mode))
	}
	startXmit := mode == "" || mode == XmitStart
	if j.CloneSKB > 0 {
		switch {
		case mode == XmitNetifReceive:
			p = append(p, "clone_skb with xmit_mode netif_receive: the kernel refuses it; set clone_skb 0")
		case startXmit && noSkbSharing[j.DeviceKind]:
			p = append(p, fmt.Sprintf("clone_skb %d on a %s device: %s cannot send a shared skb, so the kernel refuses it (error 524); set clone_skb 0", j.CloneSKB, j.DeviceKind, j.DeviceKind))
		}
	}
	if j.Burst > 1 {
		switch {
		case mode == XmitQueue:
			p = append(p, "burst with xmit_mode queue_xmit: the kernel refuses it; set burst 1 or use start_xmit")
		case startXmit && noSkbSharing[j.DeviceKind]:
			p = append(p, fmt.Sprintf("burst %d on a %s device: %s cannot send a shared skb, so the kernel refuses it (error 524); set burst 1", j.Burst, j.DeviceKind, j.DeviceKind))
		}
	}
	if j.CloneSKB < 0 || j.Burst < 0 || j.Frags < 0 || j.Frags > 17 {
		p = append(p, "clone_skb and burst must be positive, frags 0..17")
	}
	if (j.QueueMapMin == nil) != (j.QueueMapMax == nil) || (j.QueueMapMin != nil && *j.QueueMapMin > *j.QueueMapMax) {
		p = append(p, "queue_map: give both queue_map_min and queue_map_max, smallest first")
	}
	return p
}

func (j *Job) validateAddresses() []string {
	var p []string
	switch {
	case !j.DstIP.IsValid():
		p = append(p, "no destination address: set dst")
	case j.DstIPMax.IsValid() && (j.DstIPMax.Is4() != j.DstIP.Is4() || j.DstIPMax.Less(j.DstIP)):
		p = append(p, fmt.Sprintf("destination range %s-%s: same IP version, smallest first", j.DstIP, j.DstIPMax))
	}
	for _, a := range append([]netip.Addr{j.SrcIP, j.SrcIPMax}, j.ThreadSrcIP...) {
		if a.IsValid() && j.DstIP.IsValid() && a.Is4() != j.DstIP.Is4() {
			p = append(p, fmt.Sprintf("source %s and destination %s are of different IP versions", a, j.DstIP))
		}
	}
	if j.SrcIPMax.IsValid() && (!j.SrcIP.IsValid() || j.SrcIPMax.Less(j.SrcIP)) {
		p = append(p, "source range: give src and src_max, smallest first")
	}
	if j.SrcIPMax.IsValid() && j.SrcIPMax.Is6() && j.SrcIPMax != j.SrcIP {
		p = append(p, "pktgen takes one IPv6 source address, not a range")
	}
	return append(p, j.validateMACsAndPorts()...)
}

func (j *Job) validateMACsAndPorts() []string {
	var p []string
	if len(j.DstMAC) != 6 {
		p = append(p, "no destination MAC: pktgen does no ARP; give the next hop's MAC (the router's ingress interface when the destination is behind a router)")
	}
	if j.SrcMAC != nil && len(j.SrcMAC) != 6 {
		p = append(p, "source MAC must be 6 bytes")
	}
	if j.DstMACCount < 0 || j.SrcMACCount < 0 {
		p = append(p, "MAC counts must be positive")
	}
	for _, r := range [][2]int{{j.UDPSrcMin, j.UDPSrcMax}, {j.UDPDstMin, j.UDPDstMax}} {
		if r[0] < 0 || r[1] < 0 || r[0] > 65535 || r[1] > 65535 || (r[1] != 0 && r[0] > r[1]) {
			p = append(p, fmt.Sprintf("UDP port range %d-%d: ports 0..65535, smallest first", r[0], r[1]))
		}
	}
	if j.Flows < 0 || j.Flows > 65535 || j.FlowLen < 0 {
		p = append(p, "flows must be 0..65535 and flowlen positive")
	}
	return p
}

func (j *Job) validateHeaders() []string {
	var p []string
	for name, v := range map[string]*VLAN{"vlan": j.VLAN, "svlan": j.SVLAN} {
		if v != nil && (v.ID < 0 || v.ID > 4095 || v.Priority < 0 || v.Priority > 7 || v.CFI < 0 || v.CFI > 1) {
			p = append(p, fmt.Sprintf("%s: id 0..4095, priority 0..7, cfi 0..1", name))
		}
	}
	if j.SVLAN != nil && j.VLAN == nil {
		p = append(p, "svlan needs vlan (the outer tag of Q-in-Q goes with an inner one)")
	}
	if len(j.MPLS) > 16 {
		p = append(p, "at most 16 MPLS labels")
	}
	if j.TOS != nil && j.DstIP.Is6() {
		p = append(p, "tos is for IPv4; use traffic_class with an IPv6 destination")
	}
	if j.TrafficClass != nil && j.DstIP.Is4() {
		p = append(p, "traffic_class is for IPv6; use tos with an IPv4 destination")
	}
	if j.Node != nil && *j.Node < 0 {
		p = append(p, "node must be a NUMA node number")
	}
	return p
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
