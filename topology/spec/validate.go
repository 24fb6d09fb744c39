package spec

import (
	"cmp"
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// Limits and name rules.
const (
	MaxLabName   = 12 // lab names end up in markers and state file names
	MaxIfName    = 15 // IFNAMSIZ - 1
	MaxNamespace = 64 // namespace names become file names under /run/netns
)

var (
	labNameRE = lazyRE(`^[a-z0-9][a-z0-9-]*$`)
	nodeRE    = lazyRE(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	prefixRE  = lazyRE(`^[A-Za-z0-9_.-]*$`)
	ifNameRE  = lazyRE(`^[A-Za-z0-9_.-]+$`)
	sysctlRE  = lazyRE(`^net(\.[A-Za-z0-9_/-]+)+$`)
)

// globalNetSysctls are net.* keys the kernel keeps for the whole machine, not
// per namespace: setting them from a lab would change the host. Keys that
// became per-namespace in recent kernels (net.core.rmem_max and friends since
// 6.x) are not listed: where they are still global they do not exist inside
// a lab namespace, and deploy fails cleanly on them. A privileged test checks
// this list against the running kernel.
var globalNetSysctls = []string{
	"net.core.bpf_jit_enable", "net.core.bpf_jit_harden", "net.core.bpf_jit_kallsyms", "net.core.bpf_jit_limit",
	"net.core.busy_poll", "net.core.busy_read", "net.core.dev_weight", "net.core.dev_weight_rx_bias",
	"net.core.dev_weight_tx_bias", "net.core.flow_limit_cpu_bitmap", "net.core.flow_limit_table_len",
	"net.core.gro_normal_batch", "net.core.high_order_alloc_disable", "net.core.max_skb_frags",
	"net.core.message_burst", "net.core.message_cost", "net.core.netdev_budget", "net.core.netdev_budget_usecs",
	"net.core.netdev_max_backlog", "net.core.netdev_rss_key", "net.core.netdev_tstamp_prequeue",
	"net.core.rps_sock_flow_entries", "net.core.warnings",
}

// GlobalNetSysctls returns the net.* keys that validation refuses because the
// kernel does not scope them to a namespace.
func GlobalNetSysctls() []string { return append([]string(nil), globalNetSysctls...) }

// validate checks everything that is not a matter of YAML types: names,
// references between parts, addresses and routes.
func validate(r *reporter, lab *Lab, ex *extra) {
	validateLabName(r, lab, ex)
	nodes := validateNodes(r, lab)
	markVFs(lab, nodes)
	validateLinks(r, lab, ex, nodes)
	validateHosts(r, lab, ex)
	validateSRIOV(r, lab, nodes)
	validateAddresses(r, lab)
	var owners map[netip.Addr]Endpoint // built once, for the nodes with NAT rules
	ownersOnce := func() map[netip.Addr]Endpoint {
		if owners == nil {
			owners = lab.AddressOwners()
		}
		return owners
	}
	validateExpects(r, lab)
	validateTests(r, lab)
	validateMachine(r, lab)
	for _, n := range lab.Nodes {
		validateBridges(r, n)
		validateKinds(r, n)
		validateRoutes(r, n)
		validateRules(r, n)
		validateSysctls(r, n)
		validateFastPath(r, n)
		validateFlowtable(r, n)
		validatePlacement(r, n)
		validateNetfilter(r, lab, n, ownersOnce)
		validateRouting(r, n)
	}
	if len(r.probs) == 0 {
		for _, n := range lab.Nodes {
			renderNode(r, lab, n)
			userFRRDaemons(r, n)
		}
	}
	if len(r.probs) == 0 {
		assignMACs(lab)
		validateTraffic(r, lab) // paths are only meaningful in a sound lab
	}
}

func validateLabName(r *reporter, lab *Lab, ex *extra) {
	switch {
	case !ex.nameSet && lab.Name == "":
		r.errAt(1, 1, "name", "missing: every lab needs a name (lowercase letters, digits and -, at most %d characters), e.g. name: crs", MaxLabName)
	case len(lab.Name) > MaxLabName:
		r.errf("name", "lab name %q is %d characters long: at most %d", lab.Name, len(lab.Name), MaxLabName)
	case !labNameRE().MatchString(lab.Name):
		r.errf("name", "lab name %q: use lowercase letters, digits and - (not first), e.g. crs", lab.Name)
	}
	if !prefixRE().MatchString(lab.Prefix) || strings.HasPrefix(lab.Prefix, ".") || strings.HasPrefix(lab.Prefix, "-") {
		r.errf("prefix", "prefix %q: use letters, digits, _, . and - only, not starting with . or -", lab.Prefix)
	}
}

// validateNodes checks node and interface names and returns nodes by name.
func validateNodes(r *reporter, lab *Lab) map[string]*Node {
	nodes := map[string]*Node{}
	if len(lab.Nodes) == 0 && r.lookup("nodes") != (pos{}) {
		r.errf("nodes", "a lab needs at least one node")
	}
	for _, n := range lab.Nodes {
		path := "nodes." + n.Name
		nodes[n.Name] = n
		ns := lab.Prefix + n.Name
		switch {
		case !nodeRE().MatchString(n.Name):
			r.errf(path, "node name %q: use letters, digits, _, . and -, starting with a letter or digit (it names a namespace under /run/netns)", n.Name)
		case len(ns) > MaxNamespace:
			r.errf(path, "namespace name %q is %d characters long: at most %d", ns, len(ns), MaxNamespace)
		}
		names := map[string]string{}
		for _, i := range n.Interfaces {
			ipath := path + ".interfaces." + i.Name
			checkIfName(r, ipath, i.Name)
			names[i.Name] = ipath
			if i.Kind == KindLoopback && (i.MAC != nil || i.MTU != 0) {
				r.errf(ipath, "lo takes addresses only: remove mac and mtu")
			}
			if i.Kind == KindLoopback && i.Impair != nil {
				r.errf(ipath+".impair", "lo carries no lab link: put the impairment on an interface of a link")
			}
		}
		for _, b := range n.Bridges {
			bpath := path + ".bridges." + b.Name
			checkIfName(r, bpath, b.Name)
			if other, dup := names[b.Name]; dup {
				r.errf(bpath, "bridge %q has the name of %s: interface names in a node must differ", b.Name, other)
			}
			if b.Name == "lo" {
				r.errf(bpath, "a bridge cannot be named lo")
			}
			names[b.Name] = bpath
		}
	}
	return nodes
}

func checkIfName(r *reporter, path, name string) {
	switch {
	case len(name) > MaxIfName:
		r.errf(path, "interface name %q is %d bytes long: Linux allows at most %d", name, len(name), MaxIfName)
	case name == "." || name == ".." || !ifNameRE().MatchString(name):
		r.errf(path, "interface name %q: use letters, digits, _, . and - only (not . or ..)", name)
	}
}

// validateLinks resolves link endpoints to interfaces; an interface a link
// names needs no entry under interfaces: (it is added here, without
// settings), but an entry no link names is an error.
func validateLinks(r *reporter, lab *Lab, ex *extra, nodes map[string]*Node) {
	used := map[Endpoint]string{}
	// Interfaces named by any link, even a broken one, are not also
	// reported as being on no link.
	mentioned := map[Endpoint]bool{}
	undeclared := map[Endpoint]bool{} // linked without an entry under interfaces:
	for _, rl := range ex.links {
		for _, ep := range rl.endpoints {
			mentioned[ep.Endpoint] = true
		}
	}
	for _, rl := range ex.links {
		if len(rl.endpoints) != 2 {
			continue // already reported
		}
		ok := true
		for _, ep := range rl.endpoints {
			ok = resolveEndpoint(r, lab, nodes, ep, undeclared) && ok
			if other, dup := used[ep.Endpoint]; dup {
				r.errf(ep.path, "interface %s is already used by %s: a veth end belongs to one link", ep.Endpoint, other)
				ok = false
			}
			used[ep.Endpoint] = rl.path
		}
		if !ok {
			continue
		}
		a, b := rl.endpoints[0].Endpoint, rl.endpoints[1].Endpoint
		if a == b {
			r.errf(rl.path, "both endpoints are %s: a link joins two different interfaces", a)
			continue
		}
		lab.Links = append(lab.Links, &Link{A: a, B: b})
		nodes[a.Node].Interface(a.Interface).Peer = b
		nodes[b.Node].Interface(b.Interface).Peer = a
	}
	for _, n := range lab.Nodes {
		checkUnlinked(r, n, mentioned, undeclared)
	}
}

// resolveEndpoint checks one link endpoint, adding the interface to its
// node when the node does not declare it. It reports whether the endpoint
// can be linked.
func resolveEndpoint(r *reporter, lab *Lab, nodes map[string]*Node, ep rawEndpoint, undeclared map[Endpoint]bool) bool {
	n := nodes[ep.Node]
	switch {
	case n == nil:
		hint := ""
		if s := nearest(ep.Node, nodeNames(lab)); s != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", s)
		}
		r.errf(ep.path, "node %q is not defined%s: define it under nodes: or fix the name", ep.Node, hint)
		return false
	case ep.Interface == "lo":
		r.errf(ep.path, "lo is the node's loopback and cannot be a link endpoint: name a veth interface")
		return false
	case n.Interface(ep.Interface) != nil:
		return true
	case n.Bridge(ep.Interface) != nil:
		r.errf(ep.path, "%s is a bridge: link an interface and list it in the bridge's ports", ep.Endpoint)
		return false
	}
	checkIfName(r, ep.path, ep.Interface)
	n.Interfaces = append(n.Interfaces, &Interface{Name: ep.Interface})
	undeclared[ep.Endpoint] = true
	return true
}

// checkUnlinked reports node n's declared interfaces that no link names,
// suggesting an undeclared name a link uses (the likely typo).
func checkUnlinked(r *reporter, n *Node, mentioned, undeclared map[Endpoint]bool) {
	var linked []string
	for ep := range undeclared {
		if ep.Node == n.Name {
			linked = append(linked, ep.Interface)
		}
	}
	sort.Strings(linked)
	for _, i := range n.Interfaces {
		if i.Kind != KindVeth || i.Peer.Node != "" || mentioned[Endpoint{n.Name, i.Name}] {
			continue
		}
		hint := ""
		if s := nearest(i.Name, linked); s != "" {
			hint = fmt.Sprintf(" (did you mean %q, which a link names?)", s)
		}
		r.errf("nodes."+n.Name+".interfaces."+i.Name, "interface %s:%s is on no link%s: add it to links: or remove it", n.Name, i.Name, hint)
	}
}

// markVFs marks the interfaces that are VFs, adding those a node does not
// declare (a VF needs no settings of its own under interfaces:).
func markVFs(lab *Lab, nodes map[string]*Node) {
	for _, pf := range lab.SRIOV {
		for _, vf := range pf.VFs {
			n := nodes[vf.Node]
			if n == nil || vf.Name == "" {
				continue
			}
			i := n.Interface(vf.Name)
			if i == nil {
				i = &Interface{Name: vf.Name}
				n.Interfaces = append(n.Interfaces, i)
			}
			i.Kind = KindVF
		}
	}
}

func nodeNames(lab *Lab) []string {
	var out []string
	for _, n := range lab.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// validateAddresses checks addresses, MACs and MTUs across the whole lab:
// an address or MAC is used once.
func validateAddresses(r *reporter, lab *Lab) {
	addrs := map[netip.Addr]string{}
	macs := map[string]string{}
	check := func(path string, ps []netip.Prefix, mac []byte, mtu int) {
		for k, p := range ps {
			apath := fmt.Sprintf("%s.addresses[%d]", path, k)
			a := p.Addr()
			if other, dup := addrs[a]; dup {
				r.errf(apath, "address %s is already assigned at %s: each address is used once in a lab", a, other)
				continue
			}
			addrs[a] = apath
			switch {
			case a.IsUnspecified() || a.IsMulticast():
				r.errf(apath, "%s cannot be an interface address", a)
			case a.Is4() && a.IsLoopback() && !strings.Contains(path, ".interfaces.lo"):
				r.errf(apath, "%s is a loopback address: put it on lo or choose another", a)
			case a.Is4() && p.Bits() <= 30 && (a == p.Masked().Addr() || a == lastAddr(p)):
				r.errf(apath, "%s is the network or broadcast address of %s: choose a host address", a, p.Masked())
			}
			if a.Is6() && mtu != 0 && mtu < 1280 {
				r.errf(path+".mtu", "MTU %d is below 1280, the IPv6 minimum, and the interface has IPv6 address %s", mtu, a)
			}
		}
		if mac != nil {
			key := fmt.Sprintf("%x", mac)
			if other, dup := macs[key]; dup {
				r.errf(path+".mac", "MAC %02x:%02x:%02x:%02x:%02x:%02x is already used at %s", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], other)
			}
			macs[key] = path + ".mac"
		}
	}
	for _, n := range lab.Nodes {
		for _, i := range n.Interfaces {
			check("nodes."+n.Name+".interfaces."+i.Name, i.Addresses, i.MAC, i.MTU)
		}
		for _, b := range n.Bridges {
			check("nodes."+n.Name+".bridges."+b.Name, b.Addresses, b.MAC, b.MTU)
		}
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func validateBridges(r *reporter, n *Node) {
	owner := map[string]string{}
	for _, b := range n.Bridges {
		for k, p := range b.Ports {
			ppath := fmt.Sprintf("nodes.%s.bridges.%s.ports[%d]", n.Name, b.Name, k)
			i := n.Interface(p)
			switch {
			case p == "lo":
				r.errf(ppath, "lo cannot be a bridge port")
			case i == nil:
				r.errf(ppath, "port %q is on no link of node %s: link it (links: - endpoints: [%s:%s, OTHER:IF])", p, n.Name, n.Name, p)
			case owner[p] != "":
				r.errf(ppath, "port %q is already a port of bridge %s: an interface joins one bridge", p, owner[p])
			case len(i.Addresses) > 0:
				r.errf(ppath, "port %q has addresses: a bridge port carries no IP; put the addresses on bridge %s", p, b.Name)
			}
			if owner[p] == "" {
				owner[p] = b.Name
			}
		}
		validateBridgeVLANs(r, n, b)
	}
}

// validateRoutes checks that devices exist and gateways are reachable on a
// subnet the node is connected to.
func validateRoutes(r *reporter, n *Node) {
	type key struct {
		to            netip.Prefix
		metric, table int
	}
	seen := map[key]int{}
	for k, rt := range n.Routes {
		path := fmt.Sprintf("nodes.%s.routes[%d]", n.Name, k)
		rk := key{rt.To, rt.Metric, cmp.Or(rt.Table, TableMain)}
		if first, dup := seen[rk]; dup {
			r.errf(path, "route to %s with metric %d is already defined in its table at routes[%d]: give one a different metric or table, or remove it", rt.To, rt.Metric, first)
		}
		seen[rk] = k
		var devAddrs []netip.Prefix
		if rt.Dev != "" {
			if i := n.Interface(rt.Dev); i != nil {
				devAddrs = i.Addresses
			} else if b := n.Bridge(rt.Dev); b != nil {
				devAddrs = b.Addresses
			} else {
				r.errf(path+".dev", "device %q is not an interface or bridge of node %s", rt.Dev, n.Name)
				continue
			}
		}
		if !rt.Via.IsValid() {
			if rt.Dev == "" {
				r.errf(path, "a route needs via: (a gateway) or dev: (an interface), or both")
			}
			continue
		}
		if rt.Via.Is4() != rt.To.Addr().Is4() {
			r.errf(path+".via", "gateway %s and destination %s are of different IP versions", rt.Via, rt.To)
			continue
		}
		if rt.Via.Is6() && rt.Via.IsLinkLocalUnicast() {
			if rt.Dev == "" {
				r.errf(path+".dev", "gateway %s is link-local: name the interface with dev:", rt.Via)
			}
			continue
		}
		candidates := devAddrs
		if rt.Dev == "" {
			candidates = nodePrefixes(n)
		}
		if !onSubnet(rt.Via, candidates) {
			where := "any connected subnet of node " + n.Name
			if rt.Dev != "" {
				where = "a subnet of " + n.Name + ":" + rt.Dev
			}
			r.errf(path+".via", "gateway %s is not on %s: give the node an address in the gateway's subnet or fix the gateway", rt.Via, where)
		}
	}
}

func nodePrefixes(n *Node) []netip.Prefix {
	var out []netip.Prefix
	for _, i := range n.Interfaces {
		if i.Kind != KindLoopback {
			out = append(out, i.Addresses...)
		}
	}
	for _, b := range n.Bridges {
		out = append(out, b.Addresses...)
	}
	return out
}

func onSubnet(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Masked().Contains(a) && p.Addr() != a {
			return true
		}
	}
	return false
}

// validateMachine keeps machine: sysctls to the keys the kernel keeps for
// the whole machine: one a namespace has of its own belongs to a node.
func validateMachine(r *reporter, lab *Lab) {
	for _, s := range lab.Machine {
		if !contains(globalNetSysctls, s.Key) {
			r.errf(fmt.Sprintf("machine.sysctls[%q]", s.Key), "%s is not one of the machine-wide keys (%s): a key each namespace has of its own goes under a node's sysctls:", s.Key, strings.Join(globalNetSysctls, ", "))
		}
	}
}

// validateFastPath refuses an XDP fast path on a node whose interfaces
// impair or queue what they send: an XDP redirect hands frames to the
// target device directly, past its qdisc, so they would skip both.
func validateFastPath(r *reporter, n *Node) {
	for _, i := range n.Interfaces {
		if i.NAPI != nil && i.NAPI.Threaded != nil && n.Receive == ReceiveNAPI && n.Placed() {
			r.errf(fmt.Sprintf("nodes.%s.interfaces.%s.napi.threaded", n.Name, i.Name), "receive: napi on %s makes its interfaces' NAPI threaded and pins it: leave threaded out here", n.Name)
		}
	}
	if n.Forwarding.FastPath != FastPathXDP {
		return
	}
	for _, i := range n.Interfaces {
		if i.Impair != nil || i.Queue != nil {
			r.errf(fmt.Sprintf("nodes.%s.forwarding.fastpath", n.Name), "fastpath: xdp redirects frames past an interface's qdisc, and %s has an impairment or a queue the forwarded frames would skip: move it to the next node's interface, or leave the fast path out", i.Name)
			return
		}
	}
}

// validateFlowtable refuses a flowtable on a node that forwards nothing:
// the flowtable takes over flows the forward chain saw.
func validateFlowtable(r *reporter, n *Node) {
	if n.Flowtable && !n.Forwarding.IPv4 && !n.Forwarding.IPv6 {
		r.errf(fmt.Sprintf("nodes.%s.flowtable", n.Name), "a flowtable speeds up what %s forwards, and it forwards nothing: give it forwarding: true, or leave flowtable out", n.Name)
	}
}

func validateSysctls(r *reporter, n *Node) {
	for _, s := range n.Sysctls {
		path := fmt.Sprintf("nodes.%s.sysctls[%q]", n.Name, s.Key)
		switch {
		case !strings.HasPrefix(s.Key, "net."):
			r.errf(path, "only namespace-scoped net.* sysctls can be set on a node; %s belongs to the whole machine", s.Key)
		case !sysctlRE().MatchString(s.Key) || strings.Contains(s.Key, "..") || escapes(s.Key):
			r.errf(path, "sysctl key %q: write dotted names such as net.ipv4.conf.all.rp_filter (use / for a dot inside an interface name)", s.Key)
		case contains(globalNetSysctls, s.Key):
			r.errf(path, "%s is not per namespace: the kernel keeps one value for the whole machine; give it under machine: {sysctls: {%s: %s}} (the lab sets it while deployed, and destroy gives the old value back)", s.Key, s.Key, s.Value)
		case strings.ContainsAny(s.Value, "\n\x00"):
			r.errf(path, "value must be one line")
		}
	}
}

// escapes reports whether a key has a component that, once "/" is read as
// ".", would be "." or ".." and so leave /proc/sys/net.
func escapes(key string) bool {
	for _, p := range strings.Split(key, ".") {
		p = strings.ReplaceAll(p, "/", ".")
		if p == "." || p == ".." {
			return true
		}
	}
	return false
}

// validatePlacement checks a node's CPU placement and its interfaces'
// queue counts. Whether the CPUs exist is a question for the machine,
// asked before deploy.
func validatePlacement(r *reporter, n *Node) {
	path := "nodes." + n.Name
	switch {
	case n.Receive != "" && n.Receive != ReceiveRPS && n.Receive != ReceiveNAPI:
		r.errf(path+".receive", "receive %q: use rps (RPS masks on the node's rx queues) or napi (threaded NAPI pinned to its CPUs)", n.Receive)
	case n.Receive != "" && !n.Placed():
		r.errf(path+".receive", "receive: says how the node's receive work is put on its CPUs: give cpus: too, e.g. cpus: [1]")
	}
	if n.Placed() && len(n.Placeable()) == 0 {
		r.errf(path+".cpus", "node %s has no interface whose receive work could be placed: link one, or remove cpus:", n.Name)
	}
	for _, i := range n.Interfaces {
		if i.Queues == 0 {
			continue
		}
		ipath := path + ".interfaces." + i.Name + ".queues"
		switch i.Kind {
		case KindLoopback:
			r.errf(ipath, "lo has no queues to set: remove queues")
		case KindVF:
			r.errf(ipath, "a VF's queues are the NIC's: set them on the host with ethtool -L, and remove queues here")
		case KindVeth:
		case KindMacvlan, KindVLAN, KindBond, KindVRF:
			// refused with the made interface's other rules (validateMade)
		}
	}
}

// Placeable is the interfaces a placement of the node's receive work
// acts on: the veth ends and VFs (not lo; a bridge or a made interface
// receives through the interfaces it is made of).
func (n *Node) Placeable() []string {
	var out []string
	for _, i := range n.Interfaces {
		switch i.Kind {
		case KindVeth, KindVF:
			out = append(out, i.Name)
		case KindLoopback, KindMacvlan, KindVLAN, KindBond, KindVRF:
		}
	}
	return out
}
