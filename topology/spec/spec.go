// Package spec reads and validates nslab topology files. It is pure: it never
// touches the machine. Parse reports every problem of a file at once, each with
// its file:line:col and field path, so that a user fixes a file in one round.
//
// The resolved Lab it returns is what the lab package realises.
package spec

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/programs"
)

// Lab is a validated topology file.
type Lab struct {
	File   string // as given to Parse, for messages
	Source []byte // the file's contents, as parsed
	SHA256 string // of Source, hex: names the lab file in state and reports
	Name   string // lab name: [a-z0-9][a-z0-9-]*, at most 12 chars
	Prefix string // prepended to node names to form namespace names
	// prefixGiven: Prefix is not the file's but one given with WithPrefix.
	prefixGiven bool
	Hosts       []*Host // the machines a lab spans; none: one machine
	Nodes       []*Node
	Links       []*Link
	Traffic     []*Traffic
	SRIOV       []*PF
	// Machine are the machine-wide sysctls (global net.* keys) the lab
	// sets while it is deployed, in file order; destroy gives them back.
	Machine []Sysctl
	// Variants are the file's named changes to the deployed lab (see
	// Variant), in file order.
	Variants []*Variant
	// Part is set when the Lab is one host's part of a lab that spans
	// hosts (see Lab.PartOf); nil for a whole lab.
	Part *Part
	// Unplaced says why the file's CPU placement was taken out (see
	// Unplace); empty when the lab is as the file says.
	Unplaced string
	// Vars are the lab's template variables (see TemplateNode).
	Vars map[string]any

	nodeIndex map[string]*Node // see Node
	indexed   int              // len(Nodes) when nodeIndex was built
	// Unrouted are the traffic runs the file's routes do not take to
	// their destination, with their places. They are not refused: exec
	// lines, daemons and routes added by hand give a deployed lab routes
	// the file does not have. validate reports them for a lab that is
	// not deployed; path, check and bench go by the deployed lab's
	// kernels. The packet walk finds them (walk.CheckPaths), after
	// parsing: this package cannot call it.
	Unrouted Problems
	// Expects are the file's expect: lines, in order (see Expectation).
	Expects []Expectation
	// Tests are the file's tests: (see Test), in order.
	Tests       []*Test
	expectPaths []string
	where       map[string]pos // each field path's place in the file (see At)

	learned *learnedCache // what each router can learn a route to (see Learns)
}

// Placed reports whether any node or traffic run of the lab has CPUs.
func (l *Lab) Placed() bool {
	if l.NodesPlaced() {
		return true
	}
	for _, t := range l.Traffic {
		if len(t.CPUs) > 0 {
			return true
		}
	}
	return false
}

// NodesPlaced reports whether any node's receive work is placed on CPUs
// (a traffic run's sender threads aside).
func (l *Lab) NodesPlaced() bool { return slices.ContainsFunc(l.Nodes, (*Node).Placed) }

// Unplace takes the CPU placement out of the lab (nodes and traffic
// runs), for a machine that cannot give it, and records why.
func (l *Lab) Unplace(why string) {
	for _, n := range l.Nodes {
		n.CPUs, n.Receive = nil, ""
	}
	for _, t := range l.Traffic {
		if len(t.CPUs) > 0 {
			t.Threads = len(t.CPUs)
			t.CPUs = nil
		}
	}
	for _, v := range l.Variants {
		v.Lab.Unplace(why)
	}
	l.Unplaced = why
}

// Node is one network namespace.
type Node struct {
	Name       string
	Host       string // the host it runs on (see Lab.Hosts); "" without hosts
	Forwarding Forwarding
	Sysctls    []Sysctl
	Interfaces []*Interface // in file order; "lo" may appear (addresses only)
	Bridges    []*Bridge
	Routes     []*Route
	Rules      []*Rule // policy routing rules, in file order
	// CPUs are where the node's receive work runs (placement); empty:
	// wherever the kernel runs it (on veth, the sender's CPU).
	CPUs CPUSet
	// Receive is how that work is put on CPUs: ReceiveRPS or ReceiveNAPI.
	Receive string
	// Exec are command lines run once in the node at deploy, in order,
	// after its addresses and routes; each must exit 0. ServiceLines are
	// those of them that start a service as Kathara's images do
	// (systemctl start X, service X start, /etc/init.d/X start), by index:
	// in its place, nslab starts the host's program for the service in the
	// node, supervised like a run: line (no systemd runs in a node).
	Exec         []string
	ServiceLines map[int]programs.Service
	// Startup are shell scripts run whole in the node after its Exec, as
	// Kathara runs a machine's startup file (see Script).
	Startup []*Script
	// Run are long-running programs (services) started in the node after
	// every Exec, kept running until the lab is destroyed.
	Run []string
	// NAT rules, in file order (see NATRule), and the firewall for what
	// the node forwards; nil: none.
	NAT      []*NATRule
	Firewall *Firewall
	// Flowtable: the node's nftables table has a flowtable over its
	// interfaces, and its forward chain adds every TCP and UDP flow to
	// it (the kernel's software fast path for established flows).
	Flowtable bool
	// Hostname is the node's own host name ("": its name; see
	// HostnameOrName); Vars its template variables (over the lab's);
	// Files the files of its own tree; FRR and BIRD its routing daemons
	// (nil: none). See files.go.
	Hostname string
	Vars     map[string]any
	Files    []*File
	FRR      *FRR
	BIRD     *BIRD
	// Limits bound the node's processes (nil: none; see Limits).
	Limits *Limits
	// Learned are the routes of a deployed node's kernel, whoever
	// installed them (nslab, a daemon, a user), read by
	// lab.Running.Learn; never from the file. KernelRead: they were read,
	// and the packet walk goes by them instead of Routes.
	Learned    []*Route
	KernelRead bool
	// Stopped: nslab node stop stopped the deployed node (its links down,
	// its daemons stopped: it learns and announces nothing); read by
	// lab.Running.Learn, never from the file.
	Stopped bool
	// Segment: the node is a segment of the file's segments: (a bridge,
	// SegmentBridge, with a port for each endpoint), not one of nodes:.
	Segment bool
}

// Ways a node's receive work is placed on its CPUs.
const (
	// ReceiveRPS sets the RPS mask of every rx queue of the node's
	// interfaces: the packets are queued to those CPUs' backlogs, and
	// dropped there when a backlog is full.
	ReceiveRPS = "rps"
	// ReceiveNAPI turns on veth NAPI (GRO) with threaded NAPI on the
	// node's veth ends and pins their napi kthreads to the CPUs: a full
	// ring pushes back on the sender instead of dropping.
	ReceiveNAPI = "napi"
)

// Placed reports whether the node's receive work is placed on CPUs.
func (n *Node) Placed() bool { return len(n.CPUs) > 0 }

// Forwarding says which IP versions the node forwards.
type Forwarding struct {
	IPv4 bool `json:"ipv4"`
	IPv6 bool `json:"ipv6"`
	// FastPath is how the node forwards besides its stack: "" the stack
	// alone, FastPathXDP an XDP program on its interfaces that forwards
	// what its FIB and neighbours allow and passes the rest to the stack.
	FastPath string `json:"fastpath,omitempty"`
}

// FastPathXDP is the XDP forwarding fast path (package xdpfwd).
const FastPathXDP = "xdp"

// FastPaths are the fast paths a node's forwarding can take.
var FastPaths = []string{FastPathXDP}

// Sysctl is one namespace-scoped net.* setting, key in dotted form.
type Sysctl struct {
	Key   string
	Value string
}

// Interface returns the interface a per-interface key configures
// (net.ipv4.conf.eth0.rp_filter -> eth0), or "" for a namespace-wide key,
// including the all and default entries.
func (s Sysctl) Interface() string {
	parts := strings.Split(s.Key, ".")
	if len(parts) >= 5 && (parts[2] == "conf" || parts[2] == "neigh") && parts[3] != "all" && parts[3] != "default" {
		return strings.ReplaceAll(parts[3], "/", ".")
	}
	return ""
}

// ProcPath returns the /proc/sys path of a sysctl key. As sysctl(8) does, a
// "/" inside a dotted key stands for a "." in a name (net.ipv4.conf.eth0/10.rp_filter).
func (s Sysctl) ProcPath() string {
	parts := strings.Split(s.Key, ".")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, "/", ".")
	}
	return "/proc/sys/" + strings.Join(parts, "/")
}

// Interface is a network interface of a node: a veth end (named in a
// link), the node's loopback "lo", a VF, or an interface nslab makes in the
// node over others (macvlan, VLAN, bond, VRF): see Kind.
type Interface struct {
	Name      string
	Kind      Kind
	Addresses []netip.Prefix
	// MAC of a veth end: from the file or derived (see DerivedMAC). Nil
	// for lo, and for a VF whose entry sets none (it keeps the NIC's).
	MAC    net.HardwareAddr
	MTU    int // 0: kernel default
	Queues int // veth rx and tx queues; 0: the kernel's default (1)
	// MaxQueues is the most queues any of the lab's variants gives it
	// (0: none sets more than Queues): the veth end is created with that
	// many and set to use Queues (see spec.Variant).
	MaxQueues  int
	Peer       Endpoint // the other end of its link; zero for all but veth ends
	MACDerived bool     // MAC was not in the file: nslab derived it
	Impair     *Impair  // what the link does to what it sends; nil: nothing
	Queue      *Queue   // its queue discipline (under Impair when both); nil: the default
	// Offloads are the offloads the file turns on or off (OffloadNames),
	// nil: the kernel's.
	Offloads map[string]bool
	// NAPI are its NAPI settings the file gives (sysfs of the device);
	// nil: the kernel's.
	NAPI *NAPI
	// What a made interface is made of: the one of these its Kind names
	// is set, the others are nil.
	Macvlan *Macvlan
	VLAN    *VLAN
	Bond    *Bond
	VRF     *VRF
	// Live, once a deployed lab's kernel was read (lab.Running.Learn), is
	// every address the kernel has on it, link-local ones included,
	// whoever set them (nslab, an exec line, a daemon, a user); nil: not
	// read. Down: the kernel has it down (it removed its routes);
	// NoCarrier: up, but its link is down (the kernel still routes out of
	// it, and the device drops what it is given).
	Live      []netip.Prefix
	Down      bool
	NoCarrier bool
}

// NAPI are an interface's NAPI settings, each nil where the file gives
// none: threaded NAPI (a kthread per NAPI instance instead of softirq
// context), how long GRO holds packets before flushing them, and how many
// times a NAPI poll defers re-enabling interrupts.
//
// BusyPoll is not the device's: the kernel has no busy polling per
// interface, only per socket (SO_BUSY_POLL) and machine-wide
// (net.core.busy_read, net.core.busy_poll). It is how long the sockets
// nslab opens to receive on this interface (a TCP run's sink) busy-poll
// the NAPI instance their packets come from, instead of sleeping until
// its softirq has run.
type NAPI struct {
	Threaded        *bool
	GROFlushTimeout *time.Duration
	DeferHardIRQs   *int
	BusyPoll        *time.Duration
}

// Words says the settings in a line ("threaded on, gro_flush_timeout 50µs").
func (n *NAPI) Words() string {
	var out []string
	if n.Threaded != nil {
		out = append(out, fmt.Sprintf("threaded %v", onOff(*n.Threaded)))
	}
	if n.GROFlushTimeout != nil {
		out = append(out, fmt.Sprintf("gro_flush_timeout %v", *n.GROFlushTimeout))
	}
	if n.DeferHardIRQs != nil {
		out = append(out, fmt.Sprintf("defer_hard_irqs %d", *n.DeferHardIRQs))
	}
	if n.BusyPoll != nil {
		out = append(out, fmt.Sprintf("busy_poll %v (nslab's receiving sockets)", *n.BusyPoll))
	}
	return strings.Join(out, ", ")
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// OffloadNames are the offloads an interface's offloads: may set, in the
// order they are set and shown.
var OffloadNames = keysOf(offloadsDef)

// OffloadWords says offloads in a line, in OffloadNames' order ("gro on,
// tso off").
func OffloadWords(o map[string]bool) string {
	var out []string
	for _, k := range OffloadNames {
		if on, ok := o[k]; ok {
			w := "off"
			if on {
				w = "on"
			}
			out = append(out, k+" "+w)
		}
	}
	return strings.Join(out, ", ")
}

// HasIPv6 reports whether any address is IPv6.
func (i *Interface) HasIPv6() bool { return hasIPv6(i.Addresses) }

// Addrs is the interface's addresses as the packet walk sees them: the
// kernel's once read (Live), else the file's.
func (i *Interface) Addrs() []netip.Prefix {
	if i.Live != nil {
		return i.Live
	}
	return i.Addresses
}

// Bridge is a Linux bridge inside a node, with some of the node's interfaces
// as ports.
type Bridge struct {
	Name      string
	Ports     []string
	Addresses []netip.Prefix
	MAC       net.HardwareAddr
	MTU       int
	// VLANFiltering makes the bridge forward by 802.1Q VLAN, each port in
	// the VLANs VLANs gives it (see PortVLAN).
	VLANFiltering bool
	VLANs         []PortVLANs
	// Live is the kernel's addresses of the bridge, as Interface.Live.
	Live []netip.Prefix
}

// Addrs is the bridge's addresses as the packet walk sees them (see
// Interface.Addrs).
func (b *Bridge) Addrs() []netip.Prefix {
	if b.Live != nil {
		return b.Live
	}
	return b.Addresses
}

// HasIPv6 reports whether any address is IPv6.
func (b *Bridge) HasIPv6() bool { return hasIPv6(b.Addresses) }

// Route is a static route of a node.
type Route struct {
	To     netip.Prefix
	Via    netip.Addr // invalid when the route has only a device
	Dev    string
	Metric int
	Table  int // routing table; 0: main
}

// Rule is a policy routing rule of a node (ip rule): packets that match
// every field set are looked up in Table.
type Rule struct {
	From, To netip.Prefix // invalid: any
	IIF, OIF string       // "": any
	Table    int
	// Priority orders the rules, lowest first. When the file gives none,
	// it is what the kernel would give (see Node.Rules): one below the
	// lowest priority above 0 so far.
	Priority int
}

// String renders the route as iproute2 would take it.
func (r *Route) String() string {
	var b strings.Builder
	if r.To.Bits() == 0 {
		b.WriteString("default")
		if r.To.Addr().Is6() {
			b.WriteString(" (ipv6)")
		}
	} else {
		b.WriteString(r.To.String())
	}
	if r.Via.IsValid() {
		b.WriteString(" via " + r.Via.String())
	}
	if r.Dev != "" {
		b.WriteString(" dev " + r.Dev)
	}
	if r.Metric != 0 {
		b.WriteString(" metric " + strconv.Itoa(r.Metric))
	}
	if r.Table != 0 && r.Table != TableMain {
		b.WriteString(" table " + strconv.Itoa(r.Table))
	}
	return b.String()
}

// String renders the rule as iproute2 would take it.
func (r *Rule) String() string {
	var b strings.Builder
	if r.From.IsValid() {
		b.WriteString("from " + r.From.String() + " ")
	} else {
		b.WriteString("from all ")
	}
	if r.To.IsValid() {
		b.WriteString("to " + r.To.String() + " ")
	}
	if r.IIF != "" {
		b.WriteString("iif " + r.IIF + " ")
	}
	if r.OIF != "" {
		b.WriteString("oif " + r.OIF + " ")
	}
	fmt.Fprintf(&b, "table %d priority %d", r.Table, r.Priority)
	return b.String()
}

// Is6 reports whether the rule is an IPv6 one (by its prefixes; IPv4
// when it names none).
func (r *Rule) Is6() bool {
	return (r.From.IsValid() && r.From.Addr().Is6()) || (r.To.IsValid() && r.To.Addr().Is6())
}

// Link is a veth pair between two node interfaces.
type Link struct {
	A, B Endpoint
	// Between two hosts a link is a VXLAN interface at each end: VNI and
	// Port are set (from the file or derived) only then.
	VNI, Port int
}

// Namespace returns the namespace name of a node: the lab prefix + its name.
func (l *Lab) Namespace(node string) string { return l.Prefix + node }

// Node returns the named node (the first, were names repeated), or nil.
// It looks the name up in an index of the nodes, built again whenever the
// node list's length has changed (a lab of 10,000 nodes asks it for every
// link end).
func (l *Lab) Node(name string) *Node {
	if l.indexed != len(l.Nodes) {
		l.nodeIndex = make(map[string]*Node, len(l.Nodes))
		for _, n := range slices.Backward(l.Nodes) {
			l.nodeIndex[n.Name] = n
		}
		l.indexed = len(l.Nodes)
	}
	return l.nodeIndex[name]
}

// Interface returns the named interface of the node, or nil.
func (n *Node) Interface(name string) *Interface {
	for _, i := range n.Interfaces {
		if i.Name == name {
			return i
		}
	}
	return nil
}

// Bridge returns the named bridge of the node, or nil.
func (n *Node) Bridge(name string) *Bridge {
	for _, b := range n.Bridges {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// HasIPv6 reports whether the node has any IPv6 address or route.
func (n *Node) HasIPv6() bool {
	for _, i := range n.Interfaces {
		if i.HasIPv6() {
			return true
		}
	}
	for _, b := range n.Bridges {
		if b.HasIPv6() {
			return true
		}
	}
	return false
}

func hasIPv6(ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Addr().Is6() {
			return true
		}
	}
	return false
}
