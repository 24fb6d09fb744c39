package spec

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The lab file's mappings, each with its keys in the order the parser
// lists them in messages, every key with its JSON Schema and a line of
// documentation. The parser takes its key lists from here (see keysOf),
// Schema builds the JSON Schema from here, and docs/lab-file.md is
// written from here (LabFileDoc), so the three cannot drift.

// mapping is one mapping of the file.
type mapping struct {
	def   string // its name under $defs
	title string
	keys  []key
	// required keys; nullable: an empty entry (e0:) is allowed.
	required []string
	nullable bool
}

// key is one key of a mapping.
type key struct {
	name   string
	doc    string // type, default, allowed values, example
	schema map[string]any
}

// Schema fragments for the value shapes the parser reads.
var (
	// text is what the parser reads as text: a string, or a number as
	// written (a node named 1).
	text    = map[string]any{"type": []string{"string", "number"}}
	boolean = map[string]any{"type": "boolean"}
	texts   = map[string]any{"type": "array", "items": text}
	cpuSet  = map[string]any{"oneOf": []any{
		map[string]any{"type": "array", "items": intRange(0, MaxCPU), "minItems": 1},
		intRange(0, MaxCPU),
		map[string]any{"type": "string"},
	}}
	tableRef = map[string]any{"oneOf": []any{intRange(1, 1<<32-1), map[string]any{"enum": []string{"main", "default", "local"}}}}
)

func intRange(lo, hi int) map[string]any {
	return map[string]any{"type": "integer", "minimum": lo, "maximum": hi}
}

func enum(values ...string) map[string]any { return map[string]any{"enum": values} }

func ref(def string) map[string]any { return map[string]any{"$ref": "#/$defs/" + def} }

func listOf(s map[string]any) map[string]any { return map[string]any{"type": "array", "items": s} }

func mapOf(s map[string]any) map[string]any {
	return map[string]any{"type": []string{"object", "null"}, "additionalProperties": s}
}

func nullable(s map[string]any) map[string]any {
	return map[string]any{"oneOf": []any{s, map[string]any{"type": "null"}}}
}

var labDef = mapping{def: "lab", title: "an nslab lab file", required: []string{"name", "nodes"}, keys: []key{
	{"name", "text, required: the lab's name, lowercase letters, digits and -, at most 12 characters (crs)", map[string]any{"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$", "maxLength": MaxLabName}},
	{"prefix", "text, default none: prepended to node names to form namespace names (lab1-)", text},
	{"hosts", "mapping of host name to host: the machines a lab spans (see hosts)", mapOf(ref("host"))},
	{"nodes", "mapping of node name to node, required: each node is a network namespace", mapOf(nullable(ref("node")))},
	{"links", "list of links: each a veth pair, or a VXLAN link between hosts", listOf(ref("link"))},
	{"expect", "what check holds echoes to over the routes (a lab's prefixes left out of its routing on purpose): lines \"FROM -> TO\", FROM a node or *, TO an address, prefix, node or node:interface; the last line that covers a pair wins", ref("expect")},
	{"tests", "list of tests nslab test checks on the deployed lab, each with its own wait (see test)", listOf(ref("test"))},
	{"segments", "list of segments: each a shared wire of one or more interfaces (a switch, Kathara's collision domain), made as a bridge in a node of its own", listOf(ref("segment"))},
	{"traffic", "list of traffic runs bench can send", listOf(ref("traffic"))},
	{"sriov", "list of SR-IOV PFs whose VFs are handed to nodes", listOf(ref("pf"))},
	{"variants", "mapping of variant name to a mapping of node name to what the variant changes (a bench compares variants by name), and machine: {sysctls} for the machine-wide settings (merged over the lab's)", mapOf(map[string]any{"type": []string{"object", "null"}, "properties": map[string]any{VariantMachine: ref("machine")}, "additionalProperties": ref("variantNode")})},
	{"vars", "mapping of name to value, default none: what templates read as {{.Vars.NAME}} (a node's vars: override them)", varsSchema},
	{"machine", "{sysctls}: machine-wide settings the lab changes while deployed (net.core.netdev_budget, ...), given back at destroy", ref("machine")},
}}

var machineDef = mapping{def: "machine", title: "machine-wide settings of a lab", keys: []key{
	{"sysctls", "mapping of a machine-wide net.* key (one the kernel keeps for the whole machine, not per namespace) to its value while the lab is deployed", mapOf(map[string]any{"type": []string{"string", "number", "boolean"}})},
}}

var hostDef = mapping{def: "host", title: "a host of a lab that spans hosts", keys: []key{
	{"underlay", "address, required unless node_selector: is given: the host's address on the network between the hosts (192.0.2.1)", text},
	{"mtu", "integer 1280-65535, default 1500: the underlay's MTU (a VXLAN link's interfaces may have 50 less over IPv4, 70 over IPv6)", intRange(1280, 65535)},
	{"ssh", "text: how nslab reaches the host to deploy its part from one command: [user@]host as ssh takes it (root@192.0.2.1; the user's ssh config, agent and known_hosts apply)", text},
	{"node_selector", "mapping of a Kubernetes node label to its value: deployed on Kubernetes, the host is the first node by name that has every label and holds no other host of the lab (without it, the node of the host's name); a host without underlay: gets that node's InternalIP", mapOf(text)},
}}

var nodeDef = mapping{def: "node", title: "a node (a network namespace)", keys: []key{
	{"host", "text: the host the node runs on (a name under hosts:)", text},
	{"interfaces", "mapping of interface name to interface; an interface a link names needs no entry unless it has settings", mapOf(nullable(ref("interface")))},
	{"bridges", "mapping of bridge name to bridge, inside the node", mapOf(nullable(ref("bridge")))},
	{"routes", "list of static routes", listOf(ref("route"))},
	{"rules", "list of policy routing rules (ip rule)", listOf(ref("rule"))},
	{"forwarding", "true, false or {ipv4: B, ipv6: B, fastpath: xdp}, default false: whether the node routes", map[string]any{"oneOf": []any{boolean, ref("forwarding")}}},
	{"sysctls", "mapping of namespace-scoped net.* key to value (net.ipv4.conf.all.rp_filter: 0)", mapOf(map[string]any{"type": []string{"string", "number", "boolean"}})},
	{"cpus", "CPU set ([1], 1 or \"0-3\"), default none: where the node's receive work runs", cpuSet},
	{"receive", "rps or napi, default rps with cpus: how the receive work is put on the CPUs", enum(ReceiveRPS, ReceiveNAPI)},
	{"exec", "list of command lines, run once in the node at deploy; each must exit 0", texts},
	{"run", "list of command lines, services started in the node and kept running until destroy", texts},
	{"startup", "list of shell scripts, each text or {from: FILE}: run whole in the node at deploy, in order, after its exec: lines, as Kathara runs a machine's startup file (bash; a failing line does not stop the rest, and the deploy names it with its line and output; a strict deploy fails on it); their service lines start the services nslab runs", listOf(map[string]any{"oneOf": []any{text, ref("script")}})},
	{"nat", "list of NAT rules, each one of {masquerade: ...}, {snat: ...}, {dnat: ...}; first match wins", listOf(ref("natRule"))},
	{"firewall", "a list of firewall rules (policy accept), or {policy: accept|drop, rules: [...]}: what the node forwards", ref("firewall")},
	{"flowtable", "true or false, default false: an nftables flowtable over the node's interfaces; the forward chain adds each TCP and UDP flow after its first packet, and its later packets skip the forward path (needs CONFIG_NF_FLOW_TABLE)", boolean},
	{"hostname", "host name, default the node's name: the node's own hostname (nslab exec NODE -- hostname)", text},
	{"vars", "mapping of name to value: template variables of this node, over the lab's vars:", varsSchema},
	{"files", "mapping of absolute path to text or {text|from: FILE, mode: \"0644\"}: files of the node's own tree (under /etc, /run, /var/run, /var/log, /tmp or /var/www; never the host's), each a Go template", mapOf(map[string]any{"oneOf": []any{text, ref("file")}})},
	{"frr", "{daemons: [ospfd, bgpd, ...], config: TEXT}: FRR in the node (zebra and staticd always), frr.conf a template", ref("frr")},
	{"bird", "{config: TEXT}: BIRD 2 in the node, bird.conf a template", ref("bird")},
	{"limits", "{cpu: 50%, memory: 256MiB, pids: 100}, default none: what the node's services, daemons and exec lines may take together, through a cgroup of the node's own", ref("limits")},
}}

var limitsDef = mapping{def: "limits", title: "a node's limits (a cgroup of its own)", keys: []key{
	{"cpu", "percentage of one CPU (50% is half a CPU, 150% one and a half): the CPU time the node's processes get", text},
	{"memory", "size (256MiB, 1GiB, 512MB): the memory they may use; the kernel kills a process that takes more", text},
	{"pids", "integer 1-4194304: how many processes and threads they may have", intRange(1, MaxPids)},
}}

var varsSchema = map[string]any{"type": []string{"object", "null"}, "propertyNames": map[string]any{"pattern": "^[A-Za-z][A-Za-z0-9_]*$"}}

var fileDef = mapping{def: "file", title: "a file of a node's own tree", keys: []key{
	{"text", "text: the file's contents, a Go template", text},
	{"from", "file name, relative to the lab file: the contents come from there (a Go template)", text},
	{"mode", "octal mode as text, default \"0644\"", text},
}}

var scriptDef = mapping{def: "script", title: "a startup script of a node", keys: []key{
	{"text", "text: the script", text},
	{"from", "file name, relative to the lab file: the script is read from there", text},
}}

var frrDef = mapping{def: "frr", title: "FRR in a node", keys: []key{
	{"daemons", "list of FRR daemons besides zebra and staticd: " + strings.Join(FRRDaemons, ", "), listOf(enum(FRRDaemons...))},
	{"config", "text, a Go template: /etc/frr/frr.conf (or give it under files:)", text},
	{"quagga", "true or false, default false: the configuration is Quagga's, and FRR reads it with the defaults of its releases before 7.4, which are Quagga's (an eBGP neighbour needs no policy, a BGP network statement no route in the RIB): nslab writes `frr version 7.3` at the head of each FRR configuration file in the node", boolean},
}}

var birdDef = mapping{def: "bird", title: "BIRD 2 in a node", keys: []key{
	{"config", "text, a Go template: /etc/bird/bird.conf (or give it under files:)", text},
}}

var forwardingDef = mapping{def: "forwarding", title: "forwarding per IP version", keys: []key{
	{"ipv4", "true or false, default false", boolean},
	{"ipv6", "true or false, default false", boolean},
	{"fastpath", "xdp: an XDP program on the node's veth interfaces forwards by its routes and neighbours (bpf_fib_lookup, a devmap redirect), the stack taking the rest; default none", enum(FastPaths...)},
}}

var ifaceDef = mapping{def: "interface", title: "an interface of a node", nullable: true, keys: []key{
	{"addresses", "list of address/prefix-length (10.0.1.1/24, \"fd00::1/64\")", texts},
	{"mac", "MAC address, default derived from the lab, node and interface names (\"02:00:00:00:01:01\")", text},
	{"mtu", "integer 68-65535, default the kernel's (1500)", intRange(68, 65535)},
	{"queues", "integer 1-256, default 1: rx and tx queues of a veth end", intRange(1, MaxQueues)},
	{"impair", "impairment: what the link does to what this interface sends", ref("impair")},
	{"qdisc", "queue discipline of what it sends: pfifo, fq_codel, fq, cake or htb, or {kind, settings}; under an impairment, the queue in front of it", map[string]any{"oneOf": []any{enum(QueueKinds...), ref("queue")}}},
	{"offloads", "{gro, gso, tso, rx-checksum, tx-checksum}: each true or false, the others as the kernel has them (ethtool -K)", ref("offloads")},
	{"napi", "{threaded, gro_flush_timeout, defer_hard_irqs, busy_poll}: the device's NAPI settings (its sysfs files; busy_poll its receiving sockets'), the others as the kernel has them", ref("napi")},
	{"macvlan", "{parent: IF, mode: bridge|private|vepa|passthru}: a macvlan over another interface of the node (mode default bridge)", ref("macvlan")},
	{"vlan", "{parent: IF, id: 1-4094}: an 802.1Q sub-interface", ref("vlan")},
	{"bond", "{ports: [IF, ...], mode: MODE, miimon: MS}: a bond (mode default balance-rr, miimon default 100)", ref("bond")},
	{"vrf", "{table: N, ports: [IF, ...]}: a VRF whose table is N (not 253-255)", ref("vrf")},
}}

var offloadsDef = mapping{def: "offloads", title: "an interface's offloads", keys: []key{
	{"gro", "true or false: generic receive offload (on a veth, also its NAPI)", boolean},
	{"gso", "true or false: generic segmentation offload", boolean},
	{"tso", "true or false: TCP segmentation offload", boolean},
	{"rx-checksum", "true or false: receive checksum offload", boolean},
	{"tx-checksum", "true or false: transmit checksum offload (off, TSO and scatter-gather go off with it)", boolean},
}}

var napiDef = mapping{def: "napi", title: "an interface's NAPI settings", keys: []key{
	{"threaded", "true or false: NAPI polls in a kthread of its own (napi/IF-N) instead of softirq context", boolean},
	{"gro_flush_timeout", "duration, 0 to 1s (50us): how long GRO may hold packets before it flushes them", text},
	{"defer_hard_irqs", "integer 0-1000000: NAPI polls that may end before the device's interrupt is enabled again", intRange(0, 1000000)},
	{"busy_poll", "duration in whole microseconds, 0 to 1s (50us): how long the sockets nslab opens to receive on this interface (a TCP run's sink) busy-poll its NAPI (SO_BUSY_POLL); the kernel has no per-interface busy polling, machine: sysctls sets net.core.busy_read for every socket", text},
}}

var macvlanDef = mapping{def: "macvlan", title: "a macvlan", required: []string{"parent"}, keys: []key{
	{"parent", "interface, required: the interface of the node it is over", text},
	{"mode", "bridge, private, vepa or passthru, default bridge", enum(MacvlanModes...)},
}}

var vlanDef = mapping{def: "vlan", title: "an 802.1Q VLAN sub-interface", required: []string{"parent", "id"}, keys: []key{
	{"parent", "interface, required: the interface it tags on", text},
	{"id", "integer 1-4094, required: the VLAN ID", intRange(1, 4094)},
}}

var bondDef = mapping{def: "bond", title: "a bond", required: []string{"ports"}, keys: []key{
	{"ports", "list of interfaces of the node, required; they carry no addresses", texts},
	{"mode", "balance-rr, active-backup, balance-xor, broadcast, 802.3ad, balance-tlb or balance-alb; default balance-rr", enum(BondModes...)},
	{"miimon", "integer ms, default 100: link monitoring (0: none, and a port going down goes unnoticed)", intRange(0, 1<<31-1)},
}}

var vrfDef = mapping{def: "vrf", title: "a VRF", required: []string{"table", "ports"}, keys: []key{
	{"table", "routing table, required: a number 1-4294967295 of its own", tableRef},
	{"ports", "list of interfaces of the node, required: enslaved to the VRF", texts},
}}

var bridgeDef = mapping{def: "bridge", title: "a bridge inside a node", nullable: true, keys: []key{
	{"ports", "list of interfaces of the node (linked, or made)", texts},
	{"addresses", "list of address/prefix-length", texts},
	{"mac", "MAC address, default the kernel's (the lowest port MAC)", text},
	{"mtu", "integer 68-65535", intRange(68, 65535)},
	{"vlan_filtering", "true or false, default false: forward by 802.1Q VLAN", boolean},
	{"vlans", "mapping of port to its VLANs: [10, 20] (tagged) or {tagged: [...], pvid: N}; needs vlan_filtering", mapOf(map[string]any{"oneOf": []any{listOf(intRange(1, 4094)), ref("portVLANs")}})},
}}

var portVLANsDef = mapping{def: "portVLANs", title: "a bridge port's VLANs", keys: []key{
	{"tagged", "list of VLAN IDs the port carries tagged", listOf(intRange(1, 4094))},
	{"pvid", "integer 1-4094: the VLAN of the port's untagged frames", intRange(1, 4094)},
}}

var routeDef = mapping{def: "route", title: "a static route", required: []string{"to"}, keys: []key{
	{"to", "default, ::/0 or a prefix, required (10.0.2.0/24)", text},
	{"via", "gateway address, on a subnet the node is connected to", text},
	{"dev", "interface or bridge of the node", text},
	{"metric", "integer, default 0", intRange(0, 1<<31-1)},
	{"table", "routing table, default main: a number, or main", tableRef},
}}

var ruleDef = mapping{def: "rule", title: "a policy routing rule", required: []string{"table"}, keys: []key{
	{"from", "address or prefix, default any: the packet's source", text},
	{"to", "address or prefix, default any: its destination", text},
	{"iif", "interface of the node it arrived on, default any", text},
	{"oif", "interface of the node it leaves by (sockets bound to it), default any", text},
	{"table", "routing table, required: where matching packets are looked up", tableRef},
	{"priority", "integer, default the kernel's choice (32765 for the first rule): lower first", intRange(1, 1<<32-1)},
}}

var impairDef = mapping{def: "impair", title: "an impairment (netem, or tbf for a rate alone)", keys: []key{
	{"delay", "duration (20ms, 500us)", text},
	{"jitter", "duration, not above delay", text},
	{"loss", "percentage (1%), or {mean: 5%, burst: 4}: losses in runs of burst packets on average (netem's Gilbert-Elliott model)", map[string]any{"oneOf": []any{text, ref("burstyLoss")}}},
	{"duplicate", "percentage", text},
	{"reorder", "percentage; needs a delay", text},
	{"corrupt", "percentage", text},
	{"rate", "bit rate (10Mbit, 512kbit; bps spellings are refused)", text},
	{"limit", "integer, default 1000: packets queued at most", intRange(1, 1<<31-1)},
}}

var queueDef = mapping{def: "queue", title: "a queue discipline (a kind alone, or kind with its settings)", keys: []key{
	{"kind", "pfifo, fq_codel, fq, cake or htb, required", enum(QueueKinds...)},
	{"limit", "integer: packets held at most (pfifo, fq_codel, fq)", intRange(1, 1<<20)},
	{"target", "duration (5ms): fq_codel's acceptable queue delay", text},
	{"interval", "duration (100ms): fq_codel's interval", text},
	{"bandwidth", "bit rate: cake's shaped rate (default unlimited)", text},
	{"rate", "bit rate, required for htb: its class's rate", text},
	{"ceil", "bit rate, default the rate: htb's class may borrow up to it", text},
}}

var burstyLossDef = mapping{def: "burstyLoss", title: "loss in bursts (netem's Gilbert-Elliott model)", required: []string{"mean", "burst"}, keys: []key{
	{"mean", "percentage, required: the share of packets lost (5%)", text},
	{"burst", "number, required, 1 or more: packets lost in a row on average", map[string]any{"type": []any{"number", "string"}}},
}}

var linkDef = mapping{def: "link", title: "a link", required: []string{"endpoints"}, keys: []key{
	{"endpoints", "list of two node:interface, required", map[string]any{"type": "array", "items": text, "minItems": 2, "maxItems": 2}},
	{"vni", "integer 1-16777215, default derived: the VXLAN network identifier of a link between hosts", intRange(1, MaxVNI)},
	{"port", "integer 1-65535, default 4789: the VXLAN UDP port", intRange(1, 65535)},
}}

var expectDef = mapping{def: "expect", title: "what nslab check expects of echoes, over what the routes say", keys: []key{
	{"unreachable", "list of \"FROM -> TO\": echoes that get no answer", texts},
	{"reachable", "list of \"FROM -> TO\": echoes that are answered", texts},
}}

var testDef = mapping{def: "test", title: "a test nslab test checks on the deployed lab: one kind's key, and name, wait, every, points", keys: []key{
	{"reachable", "\"FROM -> TO\": an echo from FROM (a node; node:interface sends from that interface's address) to TO (an address, node or node:interface) is answered", text},
	{"unreachable", "\"FROM -> TO\": such an echo is not answered", text},
	{"route", "a route in a node's kernel (see routeTest)", ref("routeTest")},
	{"address", "an address on a node's interface (see addressTest)", ref("addressTest")},
	{"neighbour", "a neighbour a node's kernel has resolved (see neighbourTest)", ref("neighbourTest")},
	{"bgp", "an FRR BGP session's state, read from vtysh's JSON (see bgpTest)", ref("bgpTest")},
	{"bgp-route", "a prefix FRR learned by BGP, with its AS path (see bgpRouteTest)", ref("bgpRouteTest")},
	{"ospf", "an FRR OSPF neighbour's state, read from vtysh's JSON (see ospfTest)", ref("ospfTest")},
	{"ospf6", "an FRR OSPFv3 neighbour's state, read from vtysh's JSON (see ospfTest)", ref("ospfTest")},
	{"bird", "a BIRD protocol's state, read from birdc (see birdTest)", ref("birdTest")},
	{"traffic", "a traffic run's figures from a bench of it (see trafficTest)", ref("trafficTest")},
	{"name", "text, default the test in a line: what the result table and JUnit call it", text},
	{"wait", "duration, default 0 (once): try again until the test passes or this much time passed (a routing daemon converging)", text},
	{"every", "duration, default 1s: the time between tries", text},
	{"points", "integer 0-1000, default 1: what the test is worth in a grade", intRange(0, 1000)},
}}

var routeTestDef = mapping{def: "routeTest", title: "a route a node's kernel must have", required: []string{"node", "to"}, keys: []key{
	{"node", "text, required: the node", text},
	{"to", "prefix or default, required: the route's destination (10.0.2.0/24)", text},
	{"via", "address: its next hop", text},
	{"dev", "text: its interface", text},
	{"table", "integer, default 254 (main): its table", text},
	{"protocol", "text: who installed it, as ip route shows it (static, kernel, boot, bgp, ospf, zebra)", text},
}}

var addressTestDef = mapping{def: "addressTest", title: "an address a node's interface must have", required: []string{"node", "interface", "address"}, keys: []key{
	{"node", "text, required: the node", text},
	{"interface", "text, required: the interface", text},
	{"address", "address/length, required (10.0.1.1/24)", text},
}}

var neighbourTestDef = mapping{def: "neighbourTest", title: "a neighbour a node's kernel must have resolved (reachable, stale, delay, probe or permanent)", required: []string{"node", "address"}, keys: []key{
	{"node", "text, required: the node", text},
	{"address", "address, required: the neighbour's", text},
}}

var bgpTestDef = mapping{def: "bgpTest", title: "an FRR BGP session", required: []string{"node", "neighbor"}, keys: []key{
	{"node", "text, required: the node (it runs FRR)", text},
	{"neighbor", "address, required: the neighbour's, as frr.conf names it", text},
	{"state", "text, default Established: the session's state as FRR says it", text},
	{"prefixes", "integer: at least this many prefixes received (accepted) from it", text},
}}

var bgpRouteTestDef = mapping{def: "bgpRouteTest", title: "a prefix FRR learned by BGP", required: []string{"node", "prefix"}, keys: []key{
	{"node", "text, required: the node (it runs FRR)", text},
	{"prefix", "prefix, required (10.9.0.0/24)", text},
	{"as-path", "text: the best path's AS path, as FRR writes it (\"65002 65003\")", text},
}}

var ospfTestDef = mapping{def: "ospfTest", title: "an FRR OSPF (ospf:) or OSPFv3 (ospf6:) neighbour", required: []string{"node", "neighbor"}, keys: []key{
	{"node", "text, required: the node (it runs FRR)", text},
	{"neighbor", "router ID, required: the neighbour's (10.0.0.2)", text},
	{"state", "text, default Full: the adjacency's state, as FRR says it (its part before /)", text},
}}

var birdTestDef = mapping{def: "birdTest", title: "a BIRD protocol", required: []string{"node", "protocol"}, keys: []key{
	{"node", "text, required: the node (it runs BIRD)", text},
	{"protocol", "text, required: the protocol's name in bird.conf", text},
	{"state", "text, default up: its state as birdc show protocols says it", text},
}}

var trafficTestDef = mapping{def: "trafficTest", title: "a traffic run's figures, from a bench of it", required: []string{"run"}, keys: []key{
	{"run", "text, required: a traffic run of the file", text},
	{"rate", "packet rate: send at this rate instead of the run's (200kpps)", text},
	{"loss", "percentage: the loss at most (0.1%)", text},
	{"received", "packet rate: the receiver's rate at least (190kpps)", text},
	{"p99", "duration: the 99th percentile of the latency at most (1ms)", text},
}}

// testDefs are the mappings of the tests' kinds, by kind.
var testDefs = map[string]*mapping{"route": &routeTestDef, "address": &addressTestDef, "neighbour": &neighbourTestDef, "bgp": &bgpTestDef,
	"bgp-route": &bgpRouteTestDef, "ospf": &ospfTestDef, "ospf6": &ospfTestDef, "bird": &birdTestDef, "traffic": &trafficTestDef}

// keyDoc is key k's doc.
func (m mapping) keyDoc(k string) string {
	for _, x := range m.keys {
		if x.name == k {
			return x.doc
		}
	}
	return ""
}

var segmentDef = mapping{def: "segment", title: "a segment: a bridge in a node of its own, with a veth to each endpoint", required: []string{"name", "endpoints"}, keys: []key{
	{"name", "text, required: the segment's node (its namespace); a name no node has", text},
	{"endpoints", "list of one or more node:interface, required: the interfaces on the segment", map[string]any{"type": "array", "items": text, "minItems": 1}},
}}

var trafficDef = mapping{def: "traffic", title: "a traffic run", required: []string{"name", "from", "to"}, keys: []key{
	{"name", "text, required: a bench chooses the run by it", text},
	{"from", "node:interface, required: the sender interface", text},
	{"to", "address, required: an address of the lab", text},
	{"frame", "integer, default 64 (IPv6: the smallest that holds IPv6, UDP and pktgen's header, 82): the frame size in bytes with FCS", intRange(1, 65535)},
	{"frames", "list of frame sizes (a sweep), or imix (7:4:1 of 64, 594, 1518)", map[string]any{"oneOf": []any{listOf(intRange(1, 65535)), enum("imix")}}},
	{"imix", "list of {size, weight}: a mix of frame sizes (not with frame: or frames:)", listOf(ref("mixPart"))},
	{"count", "integer: packets per thread", intRange(1, 1<<62)},
	{"duration", "duration (10s)", text},
	{"rate", "max (default), a packet rate (200kpps) or a bit rate in whole Mbit (500Mbit)", text},
	{"margin", "percentage (2%): what \"no change\" means when the run's variants are compared or it is held to a baseline; default 2% in a duet, 3% in sequential pairs, 1% against a baseline; a bench's margin option overrides it", text},
	{"threads", "integer 1-64, default 1: sending threads", intRange(1, 64)},
	{"cpus", "CPU set: one pinned sending thread per CPU", cpuSet},
	{"engine", "auto (default), pktgen, userspace or xdp (full speed only; the receiving veth needs an XDP program or GRO)", enum(Engines...)},
	{"src_ports", "port or range (1000-2000): UDP source ports", text},
	{"dst_ports", "port or range, default 9: UDP destination ports", text},
	{"flows", "integer 1-65535: concurrent flows, a source port each (no more than src_ports: and dst_ports: give distinct pairs)", intRange(1, 65535)},
	{"flowlen", "integer: packets per flow", intRange(1, 1<<30)},
	{"options", "mapping of engine option to value", mapOf(text)},
	{"group", "text: runs of one group run together (a bench chooses the group by it)", text},
	{"tcp", "{flows, cc, duration}: TCP flows from the sender's node to a sink at to: instead of UDP frames", ref("tcp")},
}}

var tcpDef = mapping{def: "tcp", title: "TCP flows of a traffic run", keys: []key{
	{"flows", "integer 1-128, default 1: connections", intRange(1, MaxTCPFlows)},
	{"cc", "cubic, bbr or reno: each connection's congestion control; without it the sender node's default (net.ipv4.tcp_congestion_control: a variant may set it), the report naming the one used", enum(TCPCongestion...)},
	{"duration", "duration (10s), default the run's duration: how long the flows write", text},
}}

var mixPartDef = mapping{def: "mixPart", title: "a part of a frame mix", required: []string{"size"}, keys: []key{
	{"size", "integer, required: frame size in bytes with FCS", intRange(1, 65535)},
	{"weight", "integer 1-1000, default 1: packets of this size per cycle", intRange(1, 1000)},
}}

var pfDef = mapping{def: "pf", title: "an SR-IOV physical function", required: []string{"pf", "numvfs"}, keys: []key{
	{"pf", "interface, required: the PF on the host (ens4f0np0)", text},
	{"numvfs", "integer 1-4096, required: VFs the PF must have", intRange(1, 4096)},
	{"vfs", "list of VFs handed to nodes", listOf(ref("vf"))},
}}

var vfDef = mapping{def: "vf", title: "a VF handed to a node", required: []string{"index", "node"}, keys: []key{
	{"index", "integer 0-4095, required: the VF number on the PF", intRange(0, 4095)},
	{"node", "node, required", text},
	{"name", "interface name in the node, default vfINDEX", text},
	{"mac", "MAC address the PF gives the VF", text},
	{"vlan", "integer 0-4094: VLAN the PF tags the VF's frames with", intRange(0, 4094)},
	{"qos", "integer 0-7: 802.1p priority with vlan", intRange(0, 7)},
	{"trust", "true or false", boolean},
	{"spoofchk", "true or false", boolean},
	{"link_state", "auto, enable or disable", enum("auto", "enable", "disable")},
	{"min_tx_rate", "integer Mbit/s", intRange(0, 1<<31-1)},
	{"max_tx_rate", "integer Mbit/s", intRange(0, 1<<31-1)},
}}

var variantNodeDef = mapping{def: "variantNode", title: "what a variant changes on a node", keys: []key{
	{"sysctls", "mapping of net.* key to value, merged over the node's", mapOf(map[string]any{"type": []string{"string", "number", "boolean"}})},
	{"interfaces", "mapping of interface to {impair, queues}", mapOf(ref("variantInterface"))},
	{"cpus", "CPU set, or null for none", nullable(cpuSet)},
	{"forwarding", "the node's forwarding with another fastpath (xdp, or none): ipv4 and ipv6 as the node's", ref("forwarding")},
	{"receive", "rps (a variant cannot change threaded NAPI), or null", nullable(enum(ReceiveRPS, ReceiveNAPI))},
	{"nat", "list of NAT rules, replacing the node's; null for none", nullable(listOf(ref("natRule")))},
	{"firewall", "firewall, replacing the node's; null for none", nullable(ref("firewall"))},
	{"flowtable", "true or false: the nftables flowtable on or off", boolean},
	{"before", "list of command lines run in the node before each round", nullable(texts)},
	{"after", "list of command lines run in the node after each round", nullable(texts)},
}}

var variantIfaceDef = mapping{def: "variantInterface", title: "what a variant changes on an interface", nullable: true, keys: []key{
	{"impair", "impairment, or null for none", nullable(ref("impair"))},
	{"qdisc", "queue discipline, or null for none", nullable(map[string]any{"oneOf": []any{enum(QueueKinds...), ref("queue")}})},
	{"queues", "integer 1-256, or null for the kernel's", nullable(intRange(1, MaxQueues))},
	{"offloads", "offloads, merged over the interface's (what neither sets stays as the kernel has it)", ref("offloads")},
	{"napi", "NAPI settings, replacing the interface's (what it does not give goes back to what the interface had)", ref("napi")},
}}

// natKeysOf and filterDef are the rules of nat: and firewall:.
var (
	masqueradeDef = mapping{def: "masquerade", title: "a masquerade rule", keys: []key{
		{"out", "interface or bridge it leaves by", text}, {"from", "address or prefix", text}}}
	snatDef = mapping{def: "snat", title: "an snat rule", required: []string{"to"}, keys: []key{
		{"out", "interface or bridge it leaves by", text}, {"from", "address or prefix", text}, {"to", "address of the node itself", text}}}
	dnatDef = mapping{def: "dnat", title: "a dnat rule", required: []string{"to"}, keys: []key{
		{"in", "interface or bridge it arrives on", text}, {"from", "address or prefix", text}, {"proto", "tcp (default) or udp", enum("tcp", "udp")},
		{"port", "destination port", intRange(1, 65535)}, {"to", "address or address:port", text}}}
	filterDef = mapping{def: "match", title: "a firewall rule's match", nullable: true, keys: []key{
		{"in", "interface or bridge (not a bridge port)", text}, {"out", "interface or bridge", text},
		{"from", "address or prefix", text}, {"to", "address or prefix", text},
		{"proto", "tcp, udp, icmp or icmpv6", enum("tcp", "udp", "icmp", "icmpv6")},
		{"port", "destination port (tcp unless proto says udp)", intRange(1, 65535)},
		{"state", "new, established, related, invalid, or a list of them", map[string]any{"oneOf": []any{enum("new", "established", "related", "invalid"), listOf(enum("new", "established", "related", "invalid"))}}}}}
	firewallDef = mapping{def: "firewallPolicy", title: "a firewall with a policy", keys: []key{
		{"policy", "accept (default) or drop", enum("accept", "drop")},
		{"rules", "list of rules, each {accept: MATCH} or {drop: MATCH}", listOf(ref("filterRule"))}}}
)

// mappings are every mapping of the file, the lab first.
var mappings = []*mapping{&labDef, &machineDef, &hostDef, &nodeDef, &forwardingDef, &ifaceDef, &offloadsDef, &napiDef, &macvlanDef, &vlanDef, &bondDef, &vrfDef,
	&bridgeDef, &portVLANsDef, &routeDef, &ruleDef, &impairDef, &burstyLossDef, &queueDef, &linkDef, &segmentDef, &expectDef, &testDef, &routeTestDef, &addressTestDef, &neighbourTestDef, &bgpTestDef, &bgpRouteTestDef, &ospfTestDef, &birdTestDef, &trafficTestDef, &trafficDef, &tcpDef, &mixPartDef, &pfDef, &vfDef,
	&variantNodeDef, &variantIfaceDef, &masqueradeDef, &snatDef, &dnatDef, &filterDef, &firewallDef, &fileDef, &scriptDef, &frrDef, &birdDef, &limitsDef}

// keysOf is a mapping's key names, in order: the parser's key list.
func keysOf(m mapping) []string {
	out := make([]string, len(m.keys))
	for i, k := range m.keys {
		out[i] = k.name
	}
	return out
}

// object is a mapping's JSON Schema.
func (m *mapping) object() map[string]any {
	props := map[string]any{}
	for _, k := range m.keys {
		s := map[string]any{"description": k.doc}
		for n, v := range k.schema {
			s[n] = v
		}
		props[k.name] = s
	}
	o := map[string]any{"type": "object", "title": m.title, "properties": props, "additionalProperties": false}
	if m.nullable {
		o["type"] = []string{"object", "null"}
	}
	if len(m.required) > 0 {
		o["required"] = m.required
	}
	return o
}

// SchemaID is where the schema is published, and what the examples'
// yaml-language-server modelines name.
const SchemaID = "https://raw.githubusercontent.com/nslab/nslab/main/docs/lab.schema.json"

// Schema returns the JSON Schema (draft 2020-12) of the lab file, built
// from the parser's own key tables. It catches what a schema can: unknown
// keys, types, ranges, allowed words; the parser's other rules (links to
// declared nodes, addresses once, routes reachable) are for nslab validate.
func Schema() []byte {
	defs := map[string]any{}
	for _, m := range mappings {
		defs[m.def] = m.object()
	}
	natRule := map[string]any{"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": false, "properties": map[string]any{
		"masquerade": map[string]any{"oneOf": []any{text, ref("masquerade")}},
		"snat":       ref("snat"),
		"dnat":       ref("dnat"),
	}}
	defs["natRule"] = natRule
	defs["filterRule"] = map[string]any{"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": false,
		"properties": map[string]any{"accept": ref("match"), "drop": ref("match")}}
	defs["firewall"] = map[string]any{"oneOf": []any{listOf(ref("filterRule")), ref("firewallPolicy")}}
	doc := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$id":     SchemaID,
		"title":   "nslab lab file",
		"$ref":    "#/$defs/lab",
		"$defs":   defs,
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("the lab file's schema: %v", err)) // built from literals above
	}
	return append(out, '\n')
}

// LabFileDoc is docs/lab-file.md: every mapping of the file with each of
// its keys, its type, default, allowed values and an example, written
// from the same tables as the parser's key lists and the schema.
func LabFileDoc() string {
	var b strings.Builder
	b.WriteString("# The lab file\n\n")
	b.WriteString("<!-- Written by `go test ./topology/spec -run TestLabFileDoc -update` from the parser's own key\n")
	b.WriteString("tables (topology/spec/schema.go); a test fails when this file and the parser differ. -->\n\n")
	b.WriteString("A lab file is YAML. Its keys, mapping by mapping, as `nslab validate` reads them; `nslab schema`\n")
	b.WriteString("prints the same as a JSON Schema (draft 2020-12) for editors (`docs/lab.schema.json`; the\n")
	b.WriteString("examples name it in their first line). Values the schema cannot check (a link's nodes exist,\n")
	b.WriteString("an address is used once, a route's gateway is on a subnet) are checked by `nslab validate`.\n")
	b.WriteString("Units, the same everywhere: percentages `0.5%`, bit rates `10Mbit` (never `bps`), packet\n")
	b.WriteString("rates `200kpps`, durations `20ms`.\n")
	for _, m := range mappings {
		fmt.Fprintf(&b, "\n## %s (`%s`)\n\n", m.title, m.def)
		if len(m.required) > 0 {
			fmt.Fprintf(&b, "Required: %s.\n\n", "`"+strings.Join(m.required, "`, `")+"`")
		}
		b.WriteString("| key | what it takes |\n|---|---|\n")
		for _, k := range m.keys {
			fmt.Fprintf(&b, "| `%s` | %s |\n", k.name, strings.ReplaceAll(k.doc, "|", "\\|"))
		}
	}
	b.WriteString("\n## NAT and firewall rules\n\n")
	b.WriteString("`nat:` is a list of rules, each one key: `masquerade` (an interface, or a `masquerade`\n")
	b.WriteString("mapping), `snat` or `dnat`. `firewall:` is a list of rules (policy accept) or a\n")
	b.WriteString("`firewallPolicy`; each rule is one key, `accept` or `drop`, whose value is a `match`.\n")
	return b.String()
}

// MappingDoc is one mapping of the file as the documentation shows it.
type MappingDoc struct {
	Name, Title string
	Required    []string
	Keys        [][2]string // key, what it takes
}

// KeyDocs is every mapping of the file with its keys and their lines of
// documentation (what LabFileDoc and nslab-lab(5) show).
func KeyDocs() []MappingDoc {
	var out []MappingDoc
	for _, m := range mappings {
		d := MappingDoc{Name: m.def, Title: m.title, Required: m.required}
		for _, k := range m.keys {
			d.Keys = append(d.Keys, [2]string{k.name, k.doc})
		}
		out = append(out, d)
	}
	return out
}
