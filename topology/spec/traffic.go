package spec

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nslab/nslab/internal/units"

	"github.com/nslab/nslab/topology/frame"
	"gopkg.in/yaml.v3"
)

// Traffic is one named traffic run of a lab file:
//
//	traffic:
//	  - name: forward
//	    from: ns1:veth1     # sender interface; the engine runs in ns1
//	    to: 10.0.2.1        # destination address
//	    frame: 64           # or frames: [64, 128, ...] for a sweep
//	    duration: 10s       # or count: 1000000
//	    rate: max           # or 200kpps, 500Mbit
//	    threads: 1
type Traffic struct {
	Name   string
	From   Endpoint
	To     netip.Addr
	Frames []int // L2 frame sizes including FCS; several make a sweep
	// Mix is a frame mix (IMIX): every frame of one run picks its size
	// from it; Frames then holds its largest size, once.
	Mix      Mix
	Count    uint64
	Duration time.Duration
	RatePPS  uint64 // 0 with RateMbps 0: as fast as possible
	RateMbps uint64
	Threads  int
	CPUs     CPUSet // sender threads pinned one per CPU, in order; empty: not pinned
	Engine   string // auto, pktgen, userspace or xdp
	SrcPorts [2]int // UDP source port range; zero: the engine's default
	DstPorts [2]int
	Flows    int
	FlowLen  int
	Options  map[string]string // engine-specific settings (clone_skb, qdisc, ...)
	// Group names the runs that always run together: nslab bench
	// --traffic GROUP runs them all at once. "": none.
	Group string
	// TCP makes the run TCP flows instead of UDP frames; nil: UDP.
	TCP *TCP
	// Margin is what "no change" means when this run's variants are
	// compared or it is held to a baseline (a fraction: 0.02 for 2%); 0:
	// the default of the set-up. bench's --margin overrides it.
	Margin float64
}

// TCP is a traffic run's TCP flows: Flows connections from the sender's
// node to a sink at the run's destination, each with congestion control
// CC ("": the kernel's default), writing for the run's Duration.
type TCP struct {
	Flows int
	CC    string
}

// TCPCongestion are the congestion controls a TCP run can ask for.
var TCPCongestion = []string{"cubic", "bbr", "reno"}

// TCPPort is the port a TCP run's sink listens on: its flows' packets are
// traced, through policy routing and firewalls, as TCP to it.
const TCPPort = 5301

// MaxTCPFlows bounds a TCP run's connections.
const MaxTCPFlows = 128

// udpOnly are the keys of a UDP run that a TCP run has no use for.
var udpOnly = []string{"frame", "frames", "imix", "count", "rate", "threads", "cpus", "engine", "src_ports", "dst_ports", "flows", "flowlen", "options"}

// Engines a traffic run can ask for.
var Engines = []string{"auto", "pktgen", "userspace", "xdp"}

var trafficKeys = keysOf(trafficDef)

// Defaults of a traffic run.
const (
	DefaultFrame  = 64
	DefaultEngine = "auto"
)

func (r *reporter) parseTraffic(v *yaml.Node, path string) *Traffic {
	r.at(path, v.Line, v.Column)
	if v.Kind != yaml.MappingNode {
		r.errf(path, "a traffic run must be a mapping such as {name: forward, from: ns1:veth1, to: 10.0.2.1}, not %s", describe(v))
		return nil
	}
	f := r.fields(v, path, "a traffic run", trafficKeys...)
	t := &Traffic{Threads: 1, Engine: DefaultEngine, Frames: []int{DefaultFrame}}
	r.trafficEnds(f, path, t)
	if t.To.Is6() {
		t.Frames = []int{frame.Min(true)} // 64 bytes cannot hold IPv6, UDP and pktgen's header
	}
	r.trafficFrames(f, path, t)
	r.trafficMix(f, t)
	if t.Mix != nil {
		t.Frames = []int{t.Mix.Largest()}
	}
	r.trafficLength(f, t)
	if e, ok := f["margin"]; ok {
		if s, ok := r.str(e.v, e.path, "a percentage such as 2%"); ok {
			p, err := units.ParsePercent(s)
			if err != nil || p <= 0 || p >= 100 {
				r.errf(e.path, "margin %q: a percentage above 0 and below 100, such as 2%%", s)
			}
			t.Margin = p / 100
		}
	}
	r.trafficSenders(f, t)
	r.trafficFlows(f, t)
	r.trafficXDP(f, t)
	r.trafficTCP(f, t)
	return t
}

// trafficXDP refuses what engine xdp cannot send: it transmits copies of
// one frame as fast as the device takes them, so a rate, a mix, flows and
// port ranges need engine userspace.
func (r *reporter) trafficXDP(f map[string]kv, t *Traffic) {
	if t.Engine != "xdp" {
		return
	}
	wrong := map[string]bool{
		"rate":      t.RatePPS > 0 || t.RateMbps > 0,
		"imix":      t.Mix != nil,
		"frames":    t.Mix != nil,
		"flows":     t.Flows > 1,
		"src_ports": t.SrcPorts[1] > t.SrcPorts[0],
		"dst_ports": t.DstPorts[1] > t.DstPorts[0],
	}
	for _, k := range []string{"rate", "imix", "frames", "flows", "src_ports", "dst_ports"} {
		if e, ok := f[k]; ok && wrong[k] {
			r.errf(e.path, "engine xdp sends copies of one frame as fast as the device takes them: remove %s: or use engine userspace", k)
		}
	}
}

// trafficTCP reads tcp: and refuses beside it what only UDP frames use.
func (r *reporter) trafficTCP(f map[string]kv, t *Traffic) {
	e, ok := f["tcp"]
	if !ok {
		return
	}
	for _, k := range udpOnly {
		if u, ok := f[k]; ok {
			r.errf(u.path, "%s: is for UDP frames; a run with tcp: sends TCP flows: remove %s: (tcp: has flows, cc and duration)", k, k)
		}
	}
	tf := r.fields(e.v, e.path, "TCP flows", keysOf(tcpDef)...)
	t.TCP = &TCP{Flows: 1}
	if v, ok := tf["flows"]; ok {
		t.TCP.Flows, _ = r.integer(v.v, v.path, "connections", 1, MaxTCPFlows)
	}
	if v, ok := tf["cc"]; ok {
		if s, ok := r.str(v.v, v.path, "cubic, bbr or reno"); ok {
			if !contains(TCPCongestion, s) {
				r.errf(v.path, "cc %q: use cubic, bbr or reno", s)
			}
			t.TCP.CC = s
		}
	}
	if v, ok := tf["duration"]; ok {
		if _, both := f["duration"]; both {
			r.errf(v.path, "the run has duration: too: give it once")
			return
		}
		if s, ok := r.str(v.v, v.path, "a duration such as 10s"); ok {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				r.errf(v.path, "duration %q: write it like 10s, 500ms or 2m", s)
			}
			t.Duration = d
		}
	}
}

// trafficEnds reads name, from and to.
func (r *reporter) trafficEnds(f map[string]kv, path string, t *Traffic) {
	if e, ok := f["group"]; ok {
		t.Group, _ = r.str(e.v, e.path, "a group name")
	}
	if e, ok := f["name"]; ok {
		t.Name, _ = r.str(e.v, e.path, "a name")
	} else {
		r.errf(path, "missing name: (a bench chooses traffic runs by name)")
	}
	if e, ok := f["from"]; ok {
		if s, ok := r.str(e.v, e.path, "node:interface"); ok {
			ep, err := ParseInterface(s)
			if err != nil {
				r.errf(e.path, "from %v", err)
			}
			t.From = ep
		}
	} else {
		r.errf(path, "missing from: (the sender interface, node:interface)")
	}
	if e, ok := f["to"]; ok {
		if s, ok := r.str(e.v, e.path, "an IP address"); ok {
			a, err := netip.ParseAddr(s)
			if err != nil {
				r.errf(e.path, "to %q: want the destination IP address, e.g. 10.0.2.1", s)
			}
			t.To = a
		}
	} else {
		r.errf(path, "missing to: (the destination address)")
	}
}

// trafficFrames reads frame or frames.
func (r *reporter) trafficFrames(f map[string]kv, path string, t *Traffic) {
	fr, hasFrame := f["frame"]
	frs, hasFrames := f["frames"]
	switch {
	case hasFrame && hasFrames:
		r.errf(path, "give frame: or frames:, not both")
	case hasFrame:
		if n, ok := r.integer(fr.v, fr.path, "the frame size in bytes", 1, 65535); ok {
			t.Frames = []int{n}
		}
	case hasFrames && frs.v.Kind == yaml.ScalarNode: // frames: imix (trafficMix)
	case hasFrames:
		items, _ := r.list(frs.v, frs.path, "[64, 128, 256, 512, 1024, 1280, 1518]")
		t.Frames = nil
		for i, it := range items {
			if n, ok := r.integer(it, fmt.Sprintf("%s[%d]", frs.path, i), "a frame size in bytes", 1, 65535); ok {
				t.Frames = append(t.Frames, n)
			}
		}
	}
}

// trafficLength reads count, duration and rate.
func (r *reporter) trafficLength(f map[string]kv, t *Traffic) {
	if e, ok := f["count"]; ok {
		n, _ := r.integer(e.v, e.path, "packets per thread", 1, 1<<62)
		t.Count = uint64(n)
	}
	if e, ok := f["duration"]; ok {
		if s, ok := r.str(e.v, e.path, "a duration such as 10s"); ok {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				r.errf(e.path, "duration %q: write it like 10s, 500ms or 2m", s)
			}
			t.Duration = d
		}
	}
	if e, ok := f["rate"]; ok {
		if s, ok := r.str(e.v, e.path, "max, or a rate such as 200kpps or 500Mbit"); ok {
			var err error
			if t.RatePPS, t.RateMbps, err = units.ParseRate(s); err != nil {
				r.errf(e.path, "%v", err)
			}
		}
	}
}

// trafficSenders reads threads, cpus and engine.
func (r *reporter) trafficSenders(f map[string]kv, t *Traffic) {
	if e, ok := f["threads"]; ok {
		t.Threads, _ = r.integer(e.v, e.path, "the number of sending threads", 1, 64)
	}
	if e, ok := f["cpus"]; ok {
		t.CPUs = r.cpus(e.v, e.path)
		_, hasThreads := f["threads"]
		switch {
		case hasThreads && t.Threads != len(t.CPUs) && len(t.CPUs) > 0:
			r.errf(e.path, "cpus %s names %d CPU(s) but threads is %d: one thread runs per CPU listed; remove threads: or make them agree", t.CPUs, len(t.CPUs), t.Threads)
		case len(t.CPUs) > 64:
			r.errf(e.path, "at most 64 sending threads: name at most 64 CPUs")
		case len(t.CPUs) > 0:
			t.Threads = len(t.CPUs)
		}
	}
	if e, ok := f["engine"]; ok {
		if s, ok := r.str(e.v, e.path, "auto, pktgen, userspace or xdp"); ok {
			t.Engine = s
			if err := CheckEngine(s); err != nil {
				r.errf(e.path, "%v", err)
			}
		}
	}
}

// FlowPortBase is the first UDP source port of a run with flows: and no
// src_ports: (flow i sends from FlowPortBase+i).
const FlowPortBase = 10000

// trafficFlows reads ports, flows and engine options.
func (r *reporter) trafficFlows(f map[string]kv, t *Traffic) {
	for _, k := range []string{"src_ports", "dst_ports"} {
		e, ok := f[k]
		if !ok {
			continue
		}
		if s, ok := r.str(e.v, e.path, "a port or a range such as 9 or 1000-2000"); ok {
			pr, err := ParsePorts(s)
			if err != nil {
				r.errf(e.path, "%v", err)
			}
			if k == "src_ports" {
				t.SrcPorts = pr
			} else {
				t.DstPorts = pr
			}
		}
	}
	if e, ok := f["flows"]; ok {
		t.Flows, _ = r.integer(e.v, e.path, "concurrent flows", 1, 65535)
	}
	if e, ok := f["flowlen"]; ok {
		t.FlowLen, _ = r.integer(e.v, e.path, "packets per flow", 1, 1<<30)
	}
	r.flowsFit(f, t)
	if t.Flows > 1 && t.SrcPorts == [2]int{} {
		// Flows that differ by source port hash to different CPUs (RPS)
		// and queues (RSS): one port each, unless the file gives a range.
		t.SrcPorts = [2]int{FlowPortBase, FlowPortBase + t.Flows - 1}
	}
	if e, ok := f["options"]; ok {
		t.Options = map[string]string{}
		for _, o := range r.entries(e.v, e.path, "engine option: value") {
			if o.v.Kind != yaml.ScalarNode || isNull(o.v) {
				r.errAt(o.k.Line, o.k.Column, e.path+"."+o.key, "value must be a number or text")
				continue
			}
			t.Options[o.key] = o.v.Value
		}
	}
}

// flowsFit refuses more flows than the port ranges give distinct port
// pairs: the engines walk the source and the destination range in step, so
// ranges of a and b ports give lcm(a, b) pairs, and flows beyond them
// repeat a pair and are not flows of their own.
func (r *reporter) flowsFit(f map[string]kv, t *Traffic) {
	e, ok := f["flows"]
	_, src := f["src_ports"]
	_, dst := f["dst_ports"]
	if !ok || !src && !dst || t.Flows <= 1 {
		return
	}
	a, b := portCount(t.SrcPorts), portCount(t.DstPorts)
	if !src {
		a = t.Flows // flows without src_ports get a port each
	}
	pairs := a / gcd(a, b) * b
	if t.Flows > pairs {
		r.errf(e.path, "flows: %d but the ports give at most %d distinct port pairs (src_ports %d, dst_ports %d): lower flows: to %d or widen src_ports:", t.Flows, pairs, a, b, pairs)
	}
}

// portCount is how many ports range p holds (an unset range: the engine's
// one default port).
func portCount(p [2]int) int {
	if p[1] < p[0] || p == [2]int{} {
		return 1
	}
	return p[1] - p[0] + 1
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// CheckEngine checks an engine name.
func CheckEngine(name string) error {
	if !contains(Engines, name) {
		return fmt.Errorf("engine %q: use auto, pktgen, userspace or xdp", name)
	}
	return nil
}

// DefaultPort is the UDP destination port of a run that gives none.
const DefaultPort = 9

// Flow is the run's packets as the NAT and firewall rules on their path
// see them: UDP to the first destination port of the run, or a TCP
// run's TCP to its sink's port.
func (t *Traffic) Flow() Flow {
	if t.TCP != nil {
		return Flow{Proto: "tcp", Port: TCPPort}
	}
	port := t.DstPorts[0]
	if port == 0 {
		port = DefaultPort
	}
	return Flow{Proto: "udp", Port: port}
}

// ParsePorts reads "9" or "1000-2000".
func ParsePorts(s string) ([2]int, error) {
	lo, hi, rng := strings.Cut(s, "-")
	a, err1 := strconv.Atoi(lo)
	b := a
	var err2 error
	if rng {
		b, err2 = strconv.Atoi(hi)
	}
	if err1 != nil || err2 != nil || a < 1 || b > 65535 || a > b {
		return [2]int{}, fmt.Errorf("ports %q: a port 1..65535 or a range such as 1000-2000, smallest first", s)
	}
	return [2]int{a, b}, nil
}

// validateTraffic checks the traffic runs against the lab: the sender
// exists, the destination is an address in the lab that the lab's routes
// reach from the sender, sizes fit, and a run ends.
func validateTraffic(r *reporter, lab *Lab) {
	names := map[string]int{}
	for k, t := range lab.Traffic {
		path := fmt.Sprintf("traffic[%d]", k)
		if first, dup := names[t.Name]; dup && t.Name != "" {
			r.errf(path+".name", "traffic run %q is already defined at traffic[%d]", t.Name, first)
		}
		names[t.Name] = k
		checkRun(r, lab, t, path)
	}
	for k, t := range lab.Traffic {
		if first, clash := names[t.Group]; clash && t.Group != "" {
			r.errf(fmt.Sprintf("traffic[%d].group", k), "group %q has the name of traffic[%d]: runs and groups are chosen by name, so the names must differ; rename the group", t.Group, first)
		}
	}
}

// Runs returns the traffic runs a name selects: the run of that name, or
// every run of the group of that name, in file order; nil when none.
func (l *Lab) Runs(name string) []*Traffic {
	if t := l.TrafficRun(name); t != nil {
		return []*Traffic{t}
	}
	var out []*Traffic
	for _, t := range l.Traffic {
		if t.Group == name {
			out = append(out, t)
		}
	}
	return out
}

// checkRun checks one traffic run against the lab; path names it in
// problems ("traffic[0]", or "--from" for a run from the command line).
func checkRun(r *reporter, lab *Lab, t *Traffic, path string) {
	if t.Count == 0 && t.Duration == 0 {
		r.errf(path, "give count: or duration: (a run must end)")
	}
	n := lab.Node(t.From.Node)
	if n == nil || n.Interface(t.From.Interface) == nil || t.From.Interface == "lo" {
		if t.From.Node != "" {
			r.errf(path+".from", "%s is not a linked interface of the lab: name one, e.g. %s", t.From, firstEndpoint(lab))
		}
		return
	}
	if !t.To.IsValid() {
		return
	}
	mtu := n.Interface(t.From.Interface).MTU
	if mtu == 0 {
		mtu = 1500
	}
	minFrame := frame.Min(t.To.Is6())
	for _, fr := range t.Frames {
		if t.Mix != nil {
			break // its sizes are checked one by one below
		}
		if fr < minFrame || fr > mtu+18 {
			r.errf(path+".frame", "frame %d bytes: use %d..%d (L2 frame including FCS; the sender's MTU is %d)", fr, minFrame, mtu+18, mtu)
		}
	}
	for i, p := range t.Mix {
		if p.Size < minFrame || p.Size > mtu+18 {
			r.errf(fmt.Sprintf("%s.imix[%d].size", path, i), "frame %d bytes: use %d..%d (L2 frame including FCS; the sender's MTU is %d)", p.Size, minFrame, mtu+18, mtu)
		}
	}
	if t.RatePPS > 0 && t.RateMbps > 0 {
		r.errf(path+".rate", "give the rate in pps or in Mbps, not both")
	}
	if err := CheckEngine(t.Engine); err != nil {
		r.errf(path+".engine", "%v", err)
	}
}

// CheckTraffic checks a traffic run that is not in the file, or one of
// the file's with command-line changes, against the lab, as the file's
// own runs are checked: nothing is deployed before a run is known to be
// sound. Problems name the run's fields as traffic[NAME].FIELD.
// The path is not among them: see TrafficPath.
func (l *Lab) CheckTraffic(t *Traffic) error {
	r := &reporter{file: l.File, where: map[string]pos{}}
	checkRun(r, l, t, fmt.Sprintf("traffic[%s]", t.Name))
	if len(r.probs) > 0 {
		return r.probs
	}
	return nil
}

// At is a problem at path of the file (a field path as the parser names
// them, traffic[0].to), with its line and column where the parser saw
// it: for what is checked of a parsed lab after parsing (the packet walk
// of its traffic runs, topology/walk).
func (l *Lab) At(path, format string, args ...any) Problem {
	p := (&reporter{where: l.where}).lookup(path)
	return Problem{File: l.File, Line: p.line, Col: p.col, Path: path, Msg: fmt.Sprintf(format, args...)}
}

func firstEndpoint(lab *Lab) string {
	if len(lab.Links) > 0 {
		return lab.Links[0].A.String()
	}
	return "ns1:veth1"
}

// TrafficRun returns the named run, or nil.
func (l *Lab) TrafficRun(name string) *Traffic {
	for _, t := range l.Traffic {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// lazyRE compiles a regular expression the first time it is used, not at
// program start: every nslab command pays for package initialisation.
func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
