package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/programs"
	"gopkg.in/yaml.v3"
)

// ReadFile reads and parses a topology file; the lab keeps the file's
// bytes (Source), so that a deploy records exactly what it realised.
func ReadFile(path string) (*Lab, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read topology file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read topology file: %w", err)
	}
	if st.Size() > MaxFileSize {
		return nil, Problems{{File: path, Msg: fmt.Sprintf("file is %d bytes; nslab reads topology files of at most %d bytes (64 MiB): split the lab", st.Size(), MaxFileSize)}}
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil && st.Size() > 0 {
		return nil, fmt.Errorf("read topology file %s: %w", path, err)
	}
	return Parse(path, data)
}

// FileSHA is the SHA-256 of a lab file's contents, in hex: Lab.SHA256,
// and what states, plans and Lab resources record of a file.
func FileSHA(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Parse reads and validates a topology file's contents. file names it in
// messages. On any problem it returns Problems listing all of them.
func Parse(file string, data []byte) (*Lab, error) {
	r := &reporter{file: file, where: map[string]pos{}}
	lab := &Lab{File: file, Source: data, SHA256: FileSHA(data)}
	root := r.decodeDocument(data)
	if root != nil {
		ex := r.parseLab(root, lab)
		validate(r, lab, ex)
		if len(r.probs) == 0 {
			r.parseVariants(root, lab)
		}
	}
	if len(r.probs) > 0 {
		return nil, r.probs.sorted()
	}
	lab.where = r.where
	return lab, nil
}

// extra holds what the parser saw that validation needs beyond the Lab:
// things that were declared but could not be resolved yet.
type extra struct {
	nameSet bool
	links   []rawLink
}

type rawLink struct {
	path      string
	endpoints []rawEndpoint
	vni, port int // 0: not in the file
}

type rawEndpoint struct {
	path string
	Endpoint
}

var topKeys = keysOf(labDef)

func (r *reporter) parseLab(root *yaml.Node, lab *Lab) *extra {
	ex := &extra{}
	f := r.fields(root, "", "the top level", topKeys...)
	if e, ok := f["name"]; ok {
		lab.Name, ex.nameSet = r.str(e.v, "name", "the lab name")
	}
	if e, ok := f["prefix"]; ok {
		lab.Prefix, _ = r.str(e.v, "prefix", "a namespace name prefix")
	}
	if e, ok := f["hosts"]; ok {
		lab.Hosts = r.parseHosts(e)
	}
	if e, ok := f["nodes"]; ok {
		for _, ne := range r.entries(e.v, "nodes", "node name: node") {
			path := "nodes." + ne.key
			r.at(path, ne.k.Line, ne.k.Column)
			lab.Nodes = append(lab.Nodes, r.parseNode(ne.key, ne.v, path))
		}
	} else {
		r.errAt(root.Line, root.Column, "nodes", "missing: a lab needs nodes: (each one a network namespace)")
	}
	if e, ok := f["links"]; ok {
		items, _ := r.list(e.v, "links", "[{endpoints: [ns1:veth1, ns2:veth1-peer]}]")
		for i, item := range items {
			ex.links = append(ex.links, r.parseLink(item, fmt.Sprintf("links[%d]", i)))
		}
	}
	r.parseShared(f, lab, ex)
	if e, ok := f["sriov"]; ok {
		items, _ := r.list(e.v, "sriov", "[{pf: ens4f0np0, numvfs: 2, vfs: [{index: 0, node: ns1}]}]")
		for i, item := range items {
			if pf := r.parsePF(item, fmt.Sprintf("sriov[%d]", i)); pf != nil {
				lab.SRIOV = append(lab.SRIOV, pf)
			}
		}
	}
	if e, ok := f["vars"]; ok {
		lab.Vars = r.parseVars(e)
	}
	if e, ok := f["machine"]; ok {
		mf := r.fields(e.v, "machine", "the machine's settings", keysOf(machineDef)...)
		if se, ok := mf["sysctls"]; ok {
			lab.Machine = r.parseSysctls(se)
		}
	}
	if e, ok := f["traffic"]; ok {
		items, _ := r.list(e.v, "traffic", "[{name: forward, from: ns1:veth1, to: 10.0.2.1, frame: 64, duration: 10s}]")
		for i, item := range items {
			if t := r.parseTraffic(item, fmt.Sprintf("traffic[%d]", i)); t != nil {
				lab.Traffic = append(lab.Traffic, t)
			}
		}
	}
	return ex
}

var nodeKeys = keysOf(nodeDef)

func (r *reporter) parseNode(name string, v *yaml.Node, path string) *Node {
	n := &Node{Name: name}
	f := r.fields(v, path, "a node", nodeKeys...)
	if e, ok := f["host"]; ok {
		n.Host, _ = r.str(e.v, e.path, "the name of a host under hosts:")
	}
	if e, ok := f["interfaces"]; ok {
		for _, ie := range r.entries(e.v, e.path, "interface name: settings") {
			ipath := e.path + "." + ie.key
			r.at(ipath, ie.k.Line, ie.k.Column)
			n.Interfaces = append(n.Interfaces, r.parseInterface(ie.key, ie.v, ipath))
		}
	}
	if e, ok := f["bridges"]; ok {
		for _, be := range r.entries(e.v, e.path, "bridge name: settings") {
			bpath := e.path + "." + be.key
			r.at(bpath, be.k.Line, be.k.Column)
			n.Bridges = append(n.Bridges, r.parseBridge(be.key, be.v, bpath))
		}
	}
	if e, ok := f["routes"]; ok {
		items, _ := r.list(e.v, e.path, "[{to: default, via: 10.0.1.254}]")
		for i, item := range items {
			if rt := r.parseRoute(item, fmt.Sprintf("%s[%d]", e.path, i)); rt != nil {
				n.Routes = append(n.Routes, rt)
			}
		}
	}
	if e, ok := f["rules"]; ok {
		items, _ := r.list(e.v, e.path, "[{from: 10.0.2.0/24, table: 100}]")
		for i, item := range items {
			if rl := r.parseRule(item, fmt.Sprintf("%s[%d]", e.path, i)); rl != nil {
				n.Rules = append(n.Rules, rl)
			}
		}
	}
	if e, ok := f["forwarding"]; ok {
		n.Forwarding = r.parseForwarding(e.v, e.path)
	}
	if e, ok := f["sysctls"]; ok {
		n.Sysctls = r.parseSysctls(e)
	}
	if e, ok := f["cpus"]; ok {
		n.CPUs = r.cpus(e.v, e.path)
	}
	if e, ok := f["exec"]; ok {
		n.Exec = r.commands(e)
		n.ServiceLines = serviceLines(n.Exec)
	}
	if e, ok := f["run"]; ok {
		n.Run = r.commands(e)
	}
	if e, ok := f["startup"]; ok {
		n.Startup = r.scripts(e)
	}
	if e, ok := f["receive"]; ok {
		n.Receive, _ = r.str(e.v, e.path, "rps or napi")
	}
	r.parseNodeNetfilter(f, n)
	r.parseNodeView(f, n)
	return n
}

// parseNodeNetfilter reads what goes into a node's nftables table: nat:,
// firewall: and flowtable:.
func (r *reporter) parseNodeNetfilter(f map[string]kv, n *Node) {
	if e, ok := f["nat"]; ok {
		n.NAT = r.parseNAT(e)
	}
	if e, ok := f["firewall"]; ok {
		n.Firewall = r.parseFirewall(e)
	}
	if e, ok := f["flowtable"]; ok {
		n.Flowtable, _ = r.boolean(e.v, e.path, "whether the node has a flowtable")
	}
}

// parseNodeView reads what a node's own view holds, and what bounds the
// programs in it: hostname:, vars:, files:, frr:, bird: and limits:.
func (r *reporter) parseNodeView(f map[string]kv, n *Node) {
	if e, ok := f["limits"]; ok {
		n.Limits = r.parseLimits(e)
	}
	if e, ok := f["hostname"]; ok {
		n.Hostname = r.parseHostname(e)
	}
	if e, ok := f["vars"]; ok {
		n.Vars = r.parseVars(e)
	}
	if e, ok := f["files"]; ok {
		n.Files = r.parseFiles(e)
	}
	if e, ok := f["frr"]; ok {
		n.FRR = r.parseFRR(e)
	}
	if e, ok := f["bird"]; ok {
		n.BIRD = r.parseBIRD(e)
	}
}

// parseSysctls reads a node's sysctls: mapping, in file order.
func (r *reporter) parseSysctls(e kv) []Sysctl {
	var out []Sysctl
	for _, se := range r.entries(e.v, e.path, "net.* key: value") {
		spath := fmt.Sprintf("%s[%q]", e.path, se.key)
		r.at(spath, se.k.Line, se.k.Column)
		if se.v.Kind != yaml.ScalarNode || isNull(se.v) {
			r.errf(spath, "value must be a number or text, not %s", describe(se.v))
			continue
		}
		val := se.v.Value
		if se.v.Tag == "!!bool" {
			var b bool
			_ = se.v.Decode(&b)
			val = map[bool]string{true: "1", false: "0"}[b]
		}
		out = append(out, Sysctl{Key: se.key, Value: val})
	}
	return out
}

// cpus reads a CPU set: a list of CPU numbers ([0, 2]), one number, or
// the kernel's list format ("0-3", "0,2-3").
func (r *reporter) cpus(v *yaml.Node, path string) CPUSet {
	r.at(path, v.Line, v.Column)
	const want = "CPU numbers such as [1], [0, 2] or \"0-3\""
	switch {
	case v.Kind == yaml.SequenceNode:
		var out CPUSet
		for i, it := range v.Content {
			if c, ok := r.integer(it, fmt.Sprintf("%s[%d]", path, i), "a CPU number", 0, MaxCPU); ok {
				out = append(out, c)
			}
		}
		if len(out) == 0 && len(v.Content) == 0 {
			r.errf(path, "an empty CPU list places nothing: give %s, or remove the key", want)
		}
		return out.normal()
	case v.Kind == yaml.ScalarNode && v.Tag == "!!int":
		c, _ := r.integer(v, path, "a CPU number", 0, MaxCPU)
		return CPUSet{c}
	}
	s, ok := r.str(v, path, want)
	if !ok {
		return nil
	}
	set, err := ParseCPUList(s)
	if err != nil {
		r.errf(path, "%v", err)
	}
	return set
}

var ifaceKeys = keysOf(ifaceDef)

func (r *reporter) parseInterface(name string, v *yaml.Node, path string) *Interface {
	i := &Interface{Name: name}
	if name == "lo" {
		i.Kind = KindLoopback
	}
	f := r.fields(v, path, "an interface", ifaceKeys...)
	i.Addresses, i.MAC, i.MTU = r.parseL3(f)
	if name == "lo" {
		for key := range kindKeys {
			if e, ok := f[key]; ok {
				r.errf(e.path, "lo is the node's loopback: make the %s under another name", key)
			}
		}
	} else {
		r.parseKind(i, f, path)
	}
	if e, ok := f["queues"]; ok {
		i.Queues, _ = r.integer(e.v, e.path, "the number of rx and tx queues", 1, MaxQueues)
	}
	if e, ok := f["impair"]; ok {
		i.Impair = r.parseImpair(e.v, e.path)
	}
	if e, ok := f["qdisc"]; ok {
		i.Queue = r.parseQueue(e.v, e.path)
	}
	if e, ok := f["offloads"]; ok {
		i.Offloads = r.parseOffloads(e)
	}
	if e, ok := f["napi"]; ok {
		i.NAPI = r.parseNAPI(e)
	}
	return i
}

// parseNAPI reads napi: {threaded, gro_flush_timeout, defer_hard_irqs,
// busy_poll}.
func (r *reporter) parseNAPI(e kv) *NAPI {
	n := &NAPI{}
	f := r.fields(e.v, e.path, "NAPI settings", keysOf(napiDef)...)
	if v, ok := f["threaded"]; ok {
		b, _ := r.boolean(v.v, v.path, "threaded")
		n.Threaded = &b
	}
	if v, ok := f["gro_flush_timeout"]; ok {
		if s, ok := r.str(v.v, v.path, "a duration such as 50us"); ok {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 || d > time.Second {
				r.errf(v.path, "gro_flush_timeout %q: a duration from 0 to 1s, such as 50us or 2ms", s)
			}
			n.GROFlushTimeout = &d
		}
	}
	if v, ok := f["defer_hard_irqs"]; ok {
		k, _ := r.integer(v.v, v.path, "polls", 0, 1000000)
		n.DeferHardIRQs = &k
	}
	if v, ok := f["busy_poll"]; ok {
		if s, ok := r.str(v.v, v.path, "a duration such as 50us"); ok {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 || d > time.Second || d%time.Microsecond != 0 {
				r.errf(v.path, "busy_poll %q: a whole number of microseconds from 0 to 1s, such as 50us", s)
			}
			n.BusyPoll = &d
		}
	}
	return n
}

// parseOffloads reads offloads: {gro: true, tso: false, ...}.
func (r *reporter) parseOffloads(e kv) map[string]bool {
	out := map[string]bool{}
	for k, v := range r.fields(e.v, e.path, "offloads", keysOf(offloadsDef)...) {
		out[k], _ = r.boolean(v.v, v.path, k)
	}
	return out
}

// MaxQueues bounds an interface's queue count in a lab file.
const MaxQueues = 256

var bridgeKeys = keysOf(bridgeDef)

func (r *reporter) parseBridge(name string, v *yaml.Node, path string) *Bridge {
	b := &Bridge{Name: name}
	f := r.fields(v, path, "a bridge", bridgeKeys...)
	b.Addresses, b.MAC, b.MTU = r.parseL3(f)
	if e, ok := f["vlan_filtering"]; ok {
		b.VLANFiltering, _ = r.boolean(e.v, e.path, "vlan_filtering")
	}
	if e, ok := f["vlans"]; ok {
		b.VLANs = r.parseBridgeVLANs(e)
	}
	if e, ok := f["ports"]; ok {
		items, _ := r.list(e.v, e.path, "[p1, p2]")
		for i, item := range items {
			if s, ok := r.str(item, fmt.Sprintf("%s[%d]", e.path, i), "an interface name"); ok {
				b.Ports = append(b.Ports, s)
			}
		}
	}
	return b
}

// parseL3 reads the addresses, mac and mtu keys shared by interfaces and bridges.
func (r *reporter) parseL3(f map[string]kv) (addrs []netip.Prefix, mac net.HardwareAddr, mtu int) {
	if e, ok := f["addresses"]; ok {
		items, _ := r.list(e.v, e.path, "[10.0.1.1/24, \"fd00:1::1/64\"]")
		for i, item := range items {
			p := fmt.Sprintf("%s[%d]", e.path, i)
			s, ok := r.str(item, p, "an address with prefix length")
			if !ok {
				continue
			}
			pfx, err := netip.ParsePrefix(s)
			if err != nil {
				hint := ""
				if _, err2 := netip.ParseAddr(s); err2 == nil {
					hint = fmt.Sprintf("; add the prefix length, e.g. %s/24", s)
				}
				r.errf(p, "invalid address %q: want address/prefix-length such as 10.0.1.1/24%s", s, hint)
				continue
			}
			if pfx.Addr().Zone() != "" {
				r.errf(p, "address %q has a zone: remove %%%s", s, pfx.Addr().Zone())
				continue
			}
			addrs = append(addrs, pfx)
		}
	}
	if e, ok := f["mac"]; ok {
		if s, ok := r.str(e.v, e.path, "a MAC address such as \"02:00:00:00:01:01\""); ok {
			m, err := net.ParseMAC(s)
			switch {
			case err != nil || len(m) != 6:
				r.errf(e.path, "invalid MAC %q: want six hex bytes such as \"02:00:00:00:01:01\" (quote it)", s)
			case m[0]&1 == 1:
				r.errf(e.path, "MAC %s is a multicast address: an interface needs a unicast MAC (even first byte, e.g. 02:...)", s)
			case isZero(m):
				r.errf(e.path, "MAC %s is all zeros: choose a unicast MAC such as 02:00:00:00:00:01", s)
			default:
				mac = m
			}
		}
	}
	if e, ok := f["mtu"]; ok {
		mtu, _ = r.integer(e.v, e.path, "the MTU", 68, 65535)
	}
	return addrs, mac, mtu
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

var routeKeys = keysOf(routeDef)

func (r *reporter) parseRoute(v *yaml.Node, path string) *Route {
	r.at(path, v.Line, v.Column)
	if v.Kind != yaml.MappingNode {
		r.errf(path, "a route must be a mapping such as {to: default, via: 10.0.1.254}, not %s", describe(v))
		return nil
	}
	f := r.fields(v, path, "a route", routeKeys...)
	rt := &Route{}
	var ok bool
	var to string
	if e, has := f["to"]; has {
		to, ok = r.str(e.v, e.path, "a destination such as default or 10.0.2.0/24")
	} else {
		r.errf(path, "missing to: (default, or a destination prefix such as 10.0.2.0/24)")
		ok = false
	}
	if e, has := f["via"]; has {
		if s, sok := r.str(e.v, e.path, "a gateway address"); sok {
			a, err := netip.ParseAddr(s)
			if err != nil {
				r.errf(e.path, "invalid gateway %q: want an IP address such as 10.0.1.254", s)
				ok = false
			} else {
				rt.Via = a
			}
		} else {
			ok = false
		}
	}
	if e, has := f["dev"]; has {
		rt.Dev, _ = r.str(e.v, e.path, "an interface name")
	}
	if e, has := f["metric"]; has {
		rt.Metric, _ = r.integer(e.v, e.path, "the route metric", 0, 1<<31-1)
	}
	if e, has := f["table"]; has {
		rt.Table, _ = r.routingTable(e.v, e.path)
	}
	if !ok {
		return nil
	}
	switch to {
	case "default", "0.0.0.0/0", "::/0":
		if to == "::/0" || (to == "default" && rt.Via.Is6()) {
			rt.To = netip.MustParsePrefix("::/0")
		} else {
			rt.To = netip.MustParsePrefix("0.0.0.0/0")
		}
	default:
		pfx, err := netip.ParsePrefix(to)
		if err != nil {
			r.errf(path+".to", "invalid destination %q: want default or a prefix such as 10.0.2.0/24", to)
			return nil
		}
		if pfx.Masked() != pfx {
			r.errf(path+".to", "destination %s has host bits set: did you mean %s?", to, pfx.Masked())
			return nil
		}
		rt.To = pfx
	}
	return rt
}

func (r *reporter) parseForwarding(v *yaml.Node, path string) Forwarding {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!bool" {
		b, _ := r.boolean(v, path, "forwarding")
		return Forwarding{IPv4: b, IPv6: b}
	}
	if v.Kind != yaml.MappingNode {
		r.errf(path, "must be true, false or {ipv4: true, ipv6: false}, not %s", describe(v))
		return Forwarding{}
	}
	var fw Forwarding
	f := r.fields(v, path, "forwarding", keysOf(forwardingDef)...)
	if e, ok := f["ipv4"]; ok {
		fw.IPv4, _ = r.boolean(e.v, e.path, "ipv4 forwarding")
	}
	if e, ok := f["ipv6"]; ok {
		fw.IPv6, _ = r.boolean(e.v, e.path, "ipv6 forwarding")
	}
	if e, ok := f["fastpath"]; ok {
		fw.FastPath, _ = r.str(e.v, e.path, "a fast path")
		switch {
		case fw.FastPath != "" && !contains(FastPaths, fw.FastPath):
			r.errf(e.path, "fastpath %q: use %s (an XDP program that forwards by the node's routes), or leave it out for the stack alone", fw.FastPath, strings.Join(FastPaths, ", "))
		case !fw.IPv4 && !fw.IPv6:
			r.errf(e.path, "fastpath: %s forwards for a node that forwards: add ipv4: true or ipv6: true", fw.FastPath)
		}
	}
	return fw
}

// parseShared reads expect: and segments: (each segment a node of its own
// and the links to it).
func (r *reporter) parseShared(f map[string]kv, lab *Lab, ex *extra) {
	if e, ok := f["expect"]; ok {
		r.parseExpect(e, lab)
	}
	if e, ok := f["tests"]; ok {
		r.parseTests(e, lab)
	}
	if e, ok := f["segments"]; ok {
		items, _ := r.list(e.v, "segments", "[{name: sw1, endpoints: [r1:eth0, r2:eth0, r3:eth0]}]")
		for i, item := range items {
			path := fmt.Sprintf("segments[%d]", i)
			n, links := r.parseSegment(item, path)
			if n != nil && lab.Node(n.Name) != nil {
				r.errf(path+".name", "%q is already a node: give the segment a name no node or other segment has", n.Name)
				continue
			}
			if n != nil {
				lab.Nodes = append(lab.Nodes, n)
				ex.links = append(ex.links, links...)
			}
		}
	}
}

// parseSegment reads a segment: a node of its own (Segment set) holding
// bridge br0 with a port pN for the N-th endpoint, and the links from the
// endpoints to the ports, as a lab file would write a switch by hand.
func (r *reporter) parseSegment(v *yaml.Node, path string) (*Node, []rawLink) {
	r.at(path, v.Line, v.Column)
	if v.Kind != yaml.MappingNode {
		r.errf(path, "a segment must be a mapping such as {name: sw1, endpoints: [r1:eth0, r2:eth0, r3:eth0]}, not %s", describe(v))
		return nil, nil
	}
	f := r.fields(v, path, "a segment", keysOf(segmentDef)...)
	e, ok := f["name"]
	if !ok {
		r.errf(path, "missing name: (the segment's node, a name no node has)")
		return nil, nil
	}
	name, ok := r.str(e.v, e.path, "the segment's name")
	if !ok {
		return nil, nil
	}
	e, ok = f["endpoints"]
	if !ok {
		r.errf(path, "missing endpoints: [node:interface, ...] (one or more)")
		return nil, nil
	}
	items, ok := r.list(e.v, e.path, "[r1:eth0, r2:eth0, r3:eth0]")
	if !ok || len(items) == 0 {
		r.errf(e.path, "a segment has one endpoint or more")
		return nil, nil
	}
	n := &Node{Name: name, Segment: true}
	br := &Bridge{Name: SegmentBridge}
	var links []rawLink
	for i, ep := range r.endpoints(items, e.path) {
		port := fmt.Sprintf("p%d", i+1)
		br.Ports = append(br.Ports, port)
		links = append(links, rawLink{path: ep.path, endpoints: []rawEndpoint{ep, {path: ep.path, Endpoint: Endpoint{Node: name, Interface: port}}}})
	}
	n.Bridges = []*Bridge{br}
	return n, links
}

// SegmentBridge is the bridge of a segment's node.
const SegmentBridge = "br0"

func (r *reporter) parseLink(v *yaml.Node, path string) rawLink {
	rl := rawLink{path: path}
	r.at(path, v.Line, v.Column)
	if v.Kind != yaml.MappingNode {
		r.errf(path, "a link must be a mapping such as {endpoints: [ns1:veth1, ns2:veth1-peer]}, not %s", describe(v))
		return rl
	}
	f := r.fields(v, path, "a link", keysOf(linkDef)...)
	if e, ok := f["vni"]; ok {
		rl.vni, _ = r.integer(e.v, e.path, "a VXLAN network identifier", 1, MaxVNI)
	}
	if e, ok := f["port"]; ok {
		rl.port, _ = r.integer(e.v, e.path, "the VXLAN UDP port", 1, 65535)
	}
	e, ok := f["endpoints"]
	if !ok {
		r.errf(path, "missing endpoints: [node:interface, node:interface]")
		return rl
	}
	items, ok := r.list(e.v, e.path, "[ns1:veth1, ns2:veth1-peer]")
	if !ok {
		return rl
	}
	if len(items) != 2 {
		r.errf(e.path, "a link has exactly 2 endpoints (a veth pair), not %d: for a shared segment of %d, write it under segments: as {name: NAME, endpoints: [...]}", len(items), len(items))
		return rl
	}
	rl.endpoints = r.endpoints(items, e.path)
	return rl
}

// endpoints reads a list of node:interface, reporting each one that is
// not one at its place; the good ones keep their places.
func (r *reporter) endpoints(items []*yaml.Node, path string) []rawEndpoint {
	var out []rawEndpoint
	for i, item := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		s, ok := r.str(item, p, "node:interface")
		if !ok {
			continue
		}
		ep, err := ParseInterface(s)
		if err != nil {
			r.errf(p, "endpoint %v", err)
			continue
		}
		out = append(out, rawEndpoint{path: p, Endpoint: ep})
	}
	return out
}

// commands reads a node's exec: or run: list of shell command lines.
// serviceLines are the lines of exec that start a service nslab runs, by
// index (see Node.ServiceLines); nil: none.
func serviceLines(exec []string) map[int]programs.Service {
	var out map[int]programs.Service
	for i, line := range exec {
		if _, svc, known := programs.ServiceOf(line); known {
			if out == nil {
				out = map[int]programs.Service{}
			}
			out[i] = svc
		}
	}
	return out
}

func (r *reporter) commands(e kv) []string {
	items, _ := r.list(e.v, e.path, `["iperf3 -s", "python3 -m http.server 80"]`)
	var out []string
	for i, item := range items {
		p := fmt.Sprintf("%s[%d]", e.path, i)
		s, ok := r.str(item, p, "a command line")
		switch {
		case !ok:
		case strings.TrimSpace(s) == "":
			r.errf(p, "an empty command: write the command line, or remove the entry")
		case strings.ContainsRune(s, 0):
			r.errf(p, "a command line cannot hold a NUL byte")
		default:
			out = append(out, s)
		}
	}
	return out
}
