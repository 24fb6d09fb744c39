package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/lab/inspect"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// richLab has every kind of plan step the script renders: MACs given and
// derived, MTUs, queues, IPv6, lo addresses, a bridge with an address and
// an MTU, namespace-wide and per-interface sysctls (one with spaces in its
// value), forwarding, CPU placement by RPS (with XPS over several queues)
// and by threaded NAPI, routes with via, dev, metric, on-link, IPv6 and in
// another table, policy routing rules, a macvlan, and
// impairments: a rate (tbf), and on a kernel with netem a netem one (see
// richLabFor); NAT of every kind and a firewall with prefixes of every
// shape (whole bytes, masked, one address), ports, protocols and states.
const richLab = `name: x
vars: {greeting: hello}
nodes:
  a:
    hostname: core-a
    files:
      /etc/nslab-rich/a.conf: "{{.Vars.greeting}} from {{.Name}}, router ID {{.RouterID}}\n"
      /var/log/rich/a.log: {text: "it's a 'quoted' line\n", mode: "0600"}
    sysctls: {net.ipv4.tcp_rmem: "4096 87380 6291456", net.ipv4.conf.e0.accept_local: 1}
    cpus: [0]
    interfaces:
      e0: {addresses: [10.0.1.1/24, "fd00:1::1/64"], mac: "02:00:00:00:00:01", mtu: 9000, queues: 3}
      lo: {addresses: [10.9.9.9/32]}
      m0: {macvlan: {parent: e0, mode: private}, addresses: [10.0.1.7/24]}
    routes:
      - {to: default, via: 10.0.1.254}
      - {to: "::/0", via: "fd00:1::fe"}
      - {to: 10.50.0.0/16, dev: e0, metric: 5}
  r:
    forwarding: {ipv4: true, ipv6: false}
    sysctls: {net.ipv4.conf.all.rp_filter: 0}
    interfaces:
      e0: {addresses: [10.0.1.254/24, "fd00:1::fe/64"], mtu: 9000}
      e1: {}
      e2: {mtu: 1400}
    bridges:
      br0: {ports: [e1, e2], addresses: [10.0.2.254/24, 10.0.3.1/31], mtu: 1400}
    routes:
      - {to: 10.50.0.0/16, via: 10.0.2.1, table: 100}
    rules:
      - {from: 10.0.1.0/24, to: 10.50.0.0/16, iif: e0, table: 100, priority: 100}
      - {to: 10.60.0.0/16, table: 100}
    nat:
      - masquerade: {out: br0, from: 10.0.1.0/24}
      - snat: {out: e0, to: "fd00:1::fe"}
      - dnat: {in: e0, port: 8080, to: "10.0.2.1:80"}
      - dnat: {in: e0, proto: udp, port: 53, to: 10.0.2.2}
    firewall:
      policy: drop
      rules:
        - drop: {in: e0, to: 10.0.3.0/31, proto: icmp}
        - accept: {state: [established, related]}
        - drop: {from: 10.16.0.0/12, to: 10.0.16.0/20}
        - accept: {in: e0, out: br0, from: 10.0.1.1, to: 10.0.2.0/24}
        - accept: {from: "fd00:1::/64", proto: icmpv6}
        - accept: {in: e0, proto: udp, port: 53, state: new}
  b:
    interfaces:
      e0: {addresses: [10.0.2.1/24], impair: {rate: 20Mbit, limit: 50}, qdisc: {kind: pfifo, limit: 64}}
    routes: [{to: 10.0.1.0/24, via: 10.0.2.254, metric: 10}]
  c:
    cpus: "0"
    receive: napi
    interfaces:
      e0: {addresses: [10.0.2.2/24], mtu: 1400, qdisc: {kind: htb, rate: 50Mbit, ceil: 100Mbit}}
    routes: [{to: default, via: 10.0.2.254}]
links:
  - endpoints: [a:e0, r:e0]
  - endpoints: [r:e1, b:e0]
  - endpoints: [r:e2, c:e0]
variants:               # b:e0 is created with the 4 queues this variant uses, and uses 1
  wide:
    b:
      interfaces:
        e0: {queues: 4}
`

// TestPrivilegedScriptBuildsTheSameLab deploys each lab with nslab and
// with the bash script of deploy --dry-run, under the same names, and
// compares what the kernel holds in both cases object by object: links
// (kind, MAC, MTU, flags, alias, master, veth peer, queues), addresses
// (with broadcast, scope and flags), routes of every table, and every
// readable sysctl under /proc/sys/net in each namespace. The destroy
// script must then leave nothing.
func TestPrivilegedScriptBuildsTheSameLab(t *testing.T) {
	skipWithoutShellTools(t)
	type named struct{ name, topo string }
	var topos []named
	for _, ex := range []string{"client-router-server.yaml", "pair.yaml", "switch.yaml", "policy-routing.yaml"} {
		topos = append(topos, named{ex, ex})
	}
	topos = append(topos, named{"rich", richLabFor(t)})
	if labtest.InVM {
		// The host's run builds the examples and the rich lab; the VM what
		// its kernel adds: netem with fq_codel under it, on a pair (the
		// rich lab's other lines, the host's run has just compared, cost
		// the emulated CPUs 30 s of ip and tc), and the kinds lab.
		impair := netemImpairment(t)
		if impair == "" {
			t.Fatal("the VM's kernel has no netem")
		}
		topos = []named{{"impaired", impairedPair(impair)}}
	}
	if probeKind(spec.KindVLAN) == nil && probeKind(spec.KindBond) == nil && probeKind(spec.KindVRF) == nil && probeVLANFiltering() == nil {
		topos = append(topos, named{"kinds", kindsLab})
	} else {
		t.Log("no VLAN, bond, VRF and VLAN-filtering lab here: this kernel lacks one of them (the VM has them)")
	}
	for _, x := range topos {
		topo, name := x.topo, x.name
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, topo)
			f.napiBefore = napiThreads()
			f.deploy()
			want := snapshot(t, f)
			if _, err := f.m.Destroy(f.lab.Name); err != nil {
				t.Fatal(err)
			}
			f.assertGone()
			f.napiBefore = napiThreads() // nslab's lab's linger while the test holds handles in it
			if name == "impaired" && (!qdiscIn(want, "ns1/qdisc/veth1/", "netem latency=") || !qdiscIn(want, "ns1/qdisc/veth1/", "fq_codel")) {
				t.Fatalf("the netem impairment with fq_codel under it is not in the snapshot: %v", want)
			}
			if name == "rich" && (!strings.Contains(want["c/queues/e0"], "Threaded:true") || !strings.Contains(want["c/queues/e0"], "napi-cpus=[0]") ||
				!strings.Contains(want["a/queues/e0"], "RPS:[0 0 0] XPS:[0 0 0]")) {
				t.Fatalf("the placement is not in the snapshot: %s / %s", want["c/queues/e0"], want["a/queues/e0"])
			}
			if q := want["b/link/e0"] + " " + want["b/queues/e0"]; name == "rich" && (!strings.Contains(q, " txq=4 rxq=4 ") || !strings.Contains(q, "Rx:1 Tx:1 ")) {
				t.Fatalf("b:e0 is not created with its variant's 4 queues, using 1: %s", q)
			}
			if q := want["b/qdisc/e0/100000/10001"] + " " + want["c/qdisc/e0/class 10001/ffffffff"]; name == "rich" && (!strings.HasPrefix(q, "pfifo ") || !strings.Contains(q, "htb rate=6250000 ceil=12500000")) {
				t.Fatalf("the queues are not in the snapshot: %q", q)
			}
			if tbf := want["b/qdisc/e0/10000/ffffffff"]; name == "rich" && !strings.HasPrefix(tbf, "tbf rate=2500000 limit=75700 ") {
				t.Fatalf("b:e0's impairment is not in the snapshot: %q", tbf)
			}
			if name == "rich" && (!strings.Contains(want["a/link/m0"], "macvlan-mode=1 parent=e0") || want["r/rule/2/100/10.0.1.0/24/10.50.0.0/16/e0"] != "table=100 oif= type=0" ||
				!strings.HasPrefix(want["r/route/100/10.50.0.0/16/br0/2"], "gw=10.0.2.1 ")) {
				t.Fatalf("the macvlan, rule or table-100 route is not in the snapshot: %q / %q / %q", want["a/link/m0"], want["r/rule/2/100/10.0.1.0/24/10.50.0.0/16/e0"], want["r/route/100/10.50.0.0/16/br0/2"])
			}
			if keys := nftKeys(want); name == "rich" && len(keys) != 1+3+10 {
				t.Fatalf("r's nftables table is not in the snapshot: %q", keys)
			}

			runScript(t, DeployScript(f.lab, ""))
			got := snapshot(t, f)
			runScript(t, DestroyScript(f.lab, nil, "", f.m.StateDir))
			if left := f.left(); len(left) > 0 {
				t.Errorf("the destroy script left namespaces %v", left)
			}
			if views := filepath.Join(DefaultStateDir, "views"); emptyMount(views) {
				t.Errorf("the destroy script left %s mounted, with no lab's views in it", views)
			}
			compareSnapshots(t, want, got)
		})
	}
}

// richLabFor is richLab, with a netem impairment on r:e0 when this kernel
// has netem (ours does not; the tc line is then not run anywhere).
func richLabFor(t *testing.T) string {
	impair := netemImpairment(t)
	if impair == "" {
		return richLab
	}
	return strings.Replace(richLab, `"fd00:1::fe/64"], mtu: 9000}`, `"fd00:1::fe/64"], mtu: 9000, impair: `+impair+`}`, 1)
}

// netemImpairment is the rich lab's netem impairment of r:e0 (every
// setting netem has), followed by fq_codel under it where the kernel has
// it (the VM's does), as the value of an interface's impair key; ""
// without netem.
func netemImpairment(t *testing.T) string {
	if err := qdisc.Check("netem"); err != nil {
		t.Logf("no netem impairment in the rich lab: %v", err)
		return ""
	}
	queue := ""
	if err := qdisc.CheckQueue("fq_codel"); err == nil {
		queue = ", qdisc: {kind: fq_codel, target: 5ms, interval: 100ms, limit: 500}"
	}
	return "{delay: 1500us, jitter: 500us, loss: 0.5%, duplicate: 0.1%, reorder: 1%, corrupt: 0.1%, rate: 100Mbit, limit: 300}" + queue
}

// qdiscIn reports whether the snapshot holds a qdisc under prefix whose
// description starts with kind.
func qdiscIn(snap map[string]string, prefix, kind string) bool {
	for k, v := range snap {
		if strings.HasPrefix(k, prefix) && strings.HasPrefix(v, kind) {
			return true
		}
	}
	return false
}

func skipWithoutShellTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bash", "sysctl", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (make test installs iproute2, procps and nftables; the VM gets the host's)", tool)
		}
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		t.Skipf("no iproute2 ip with netns support: %v %s", err, out)
	}
}

// TestPrivilegedScriptSRIOV runs the SR-IOV example's scripts on the fake
// PF (its PF-side settings left out: a fake PF has no VF table): the
// script finds the VF netdevs in sysfs, moves and renames them like nslab,
// and the destroy script, given what nslab records, gives them back under
// their own names and MACs.
func TestPrivilegedScriptSRIOV(t *testing.T) {
	skipWithoutShellTools(t)
	f, pf, _ := sriovFixture(t)
	y := strings.Replace(string(f.source), `, mac: "ea:0c:48:be:43:09", vlan: 0, trust: false, spoofchk: true}`, "}", 1)
	l, err := spec.Parse("sriov.yaml", []byte(y))
	must(t, err)
	if len(l.SRIOV[0].VFs) != 2 || hasSettings(l.SRIOV[0].VFs[0]) {
		t.Fatal("the example changed; fix the edit above")
	}
	f.lab, f.source = l, []byte(y)
	f.deploy()
	want := snapshot(t, f)
	st, err := f.m.loadState(l.Name)
	must(t, err)
	if _, err := f.m.Destroy(l.Name); err != nil {
		t.Fatal(err)
	}
	f.assertGone()

	script := DeployScript(l, pf.Root)
	runScript(t, script)
	if got := pf.NumVFs(t); got != "2" {
		t.Errorf("sriov_numvfs %s after the script, want 2", got)
	}
	got := snapshot(t, f)
	runScript(t, DestroyScript(l, st, pf.Root, f.m.StateDir))
	if left := f.left(); len(left) > 0 {
		t.Errorf("the destroy script left namespaces %v", left)
	}
	compareSnapshots(t, want, got)
	for i, name := range pf.VFs {
		link, err := netlink.LinkByName(name)
		if err != nil || link.Attrs().HardwareAddr.String() != pf.MACs[i] || link.Attrs().Alias != "" {
			t.Errorf("VF %s after the destroy script: %v %v", name, link, err)
		}
	}
	if got := pf.NumVFs(t); got != "0" {
		t.Errorf("sriov_numvfs %s after the destroy script, want 0", got)
	}
}

// operSettled waits (at most 3 s) until no lab link's operational state
// is "unknown": the kernel computes it after a carrier change in its
// linkwatch work, up to a second later, which a slow machine (the VM)
// shows between a deploy's end and a snapshot.
func operSettled(t *testing.T, f *fixture) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		settled := true
		for _, n := range f.lab.Nodes {
			links, err := f.handle(n.Name).LinkList()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range links {
				if l.Attrs().Name != "lo" && l.Type() != "bridge" && l.Attrs().OperState == netlink.OperUnknown {
					settled = false
				}
			}
		}
		if settled {
			return
		}
	}
}

// qdiscs describes link's qdiscs by handle and parent, with every
// parameter nslab sets (not their counters).
func qdiscs(t *testing.T, h *netlink.Handle, link netlink.Link) map[string]string {
	t.Helper()
	qs, err := h.QdiscList(link)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, q := range qs {
		a := q.Attrs()
		desc := q.Type()
		switch q := q.(type) {
		case *netlink.Netem:
			desc += fmt.Sprintf(" latency=%d jitter=%d limit=%d loss=%d gap=%d dup=%d reorder=%d corrupt=%d rate=%d corr=%d/%d/%d",
				q.Latency, q.Jitter, q.Limit, q.Loss, q.Gap, q.Duplicate, q.ReorderProb, q.CorruptProb, q.Rate64, q.DelayCorr, q.LossCorr, q.DuplicateCorr)
		case *netlink.Tbf:
			desc += fmt.Sprintf(" rate=%d limit=%d buffer=%d peak=%d minburst=%d", q.Rate, q.Limit, q.Buffer, q.Peakrate, q.Minburst)
		case *netlink.Htb:
			desc += fmt.Sprintf(" defcls=%d r2q=%d", q.Defcls, q.Rate2Quantum)
		case *netlink.FqCodel:
			desc += fmt.Sprintf(" target=%d interval=%d limit=%d ecn=%d", q.Target, q.Interval, q.Limit, q.ECN)
		}
		out[fmt.Sprintf("%x/%x", a.Handle, a.Parent)] = desc
	}
	classes, err := h.ClassList(link, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range classes {
		if hc, ok := c.(*netlink.HtbClass); ok {
			out[fmt.Sprintf("class %x/%x", hc.Handle, hc.Parent)] = fmt.Sprintf("htb rate=%d ceil=%d buffer=%d cbuffer=%d", hc.Rate, hc.Ceil, hc.Buffer, hc.Cbuffer)
		}
	}
	return out
}

func runScript(t *testing.T, script string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lab.sh")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", p).CombinedOutput(); err != nil {
		t.Fatalf("bash %s: %v\n%s\nscript:\n%s", p, err, out, script)
	}
}

// snapshot is the kernel state of a lab: "node/kind/object" -> description.
func snapshot(t *testing.T, f *fixture) map[string]string {
	t.Helper()
	operSettled(t, f)
	out := map[string]string{}
	byIndex := map[string]map[int]netlink.Link{}
	for _, n := range f.lab.Nodes {
		h := f.handle(n.Name)
		links, err := h.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		byIndex[n.Name] = map[int]netlink.Link{}
		for _, l := range links {
			byIndex[n.Name][l.Attrs().Index] = l
		}
	}
	for _, n := range f.lab.Nodes {
		h := f.handle(n.Name)
		idx := byIndex[n.Name]
		name := func(i int) string {
			if l, ok := idx[i]; ok {
				return l.Attrs().Name
			}
			return fmt.Sprint(i)
		}
		for _, l := range idx {
			a := l.Attrs()
			desc := fmt.Sprintf("type=%s mac=%s mtu=%d flags=%s oper=%s alias=%q master=%s txqlen=%d txq=%d rxq=%d gso=%d/%d promisc=%d",
				l.Type(), a.HardwareAddr, a.MTU, a.Flags, a.OperState, a.Alias, name(a.MasterIndex), a.TxQLen, a.NumTxQueues, a.NumRxQueues, a.GSOMaxSize, a.GSOMaxSegs, a.Promisc)
			if _, ok := l.(*netlink.Veth); ok {
				desc += " peer=" + vethPeer(byIndex, n.Name, a)
			}
			if br, ok := l.(*netlink.Bridge); ok {
				desc += fmt.Sprintf(" stp-hello=%v ageing=%v vlan-filtering=%v mcast-snooping=%v",
					deref(br.HelloTime), deref(br.AgeingTime), deref(br.VlanFiltering), deref(br.MulticastSnooping))
			}
			desc += kindSnapshot(l, name)
			out[n.Name+"/link/"+a.Name] = desc
			addrs, err := h.AddrList(l, netlink.FAMILY_ALL)
			if err != nil {
				t.Fatal(err)
			}
			for _, ad := range addrs {
				out[n.Name+"/addr/"+a.Name+"/"+ad.IPNet.String()] = fmt.Sprintf("brd=%v scope=%d flags=%#x label=%q peer=%v",
					ad.Broadcast, ad.Scope, ad.Flags, ad.Label, ad.Peer)
			}
		}
		routes, err := h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range routes {
			key := fmt.Sprintf("%s/route/%d/%v/%s/%d", n.Name, r.Table, r.Dst, name(r.LinkIndex), r.Family)
			out[key] = fmt.Sprintf("gw=%v src=%v scope=%d proto=%d metric=%d type=%d flags=%d", r.Gw, r.Src, r.Scope, r.Protocol, r.Priority, r.Type, r.Flags)
		}
		for k, v := range rulesSnapshot(t, h) {
			out[n.Name+"/rule/"+k] = v
		}
		for k, v := range bridgeVLANs(t, h, name) {
			out[n.Name+"/vlans/"+k] = v
		}
		for k, v := range labtest.Sysctls(t, f.m.netnsDir(), f.ns(n.Name)) {
			out[n.Name+"/sysctl/"+k] = v
		}
		for k, v := range queues(t, f, n.Name, idx) {
			out[n.Name+"/queues/"+k] = v
		}
		for _, l := range idx {
			for k, v := range qdiscs(t, h, l) {
				out[n.Name+"/qdisc/"+l.Attrs().Name+"/"+k] = v
			}
		}
		for k, v := range nftSnapshot(t, f, n.Name) {
			out[n.Name+"/nft/"+k] = v
		}
		out[n.Name+"/view"] = viewSnapshot(t, f, n)
	}
	return out
}

// viewSnapshot is node n's view as a program in it sees it: its hostname,
// /etc/hostname and /etc/hosts, each of its files with its mode, owner
// and text, and the file systems of its private directories and /etc. The
// view is nslab's (under the fixture's state directory) or the deploy
// script's (under the default one).
func viewSnapshot(t *testing.T, f *fixture, n *spec.Node) string {
	t.Helper()
	x, err := ns.Open(f.m.netnsDir(), f.ns(n.Name))
	must(t, err)
	defer x.Close()
	v, err := ns.OpenView(f.m.labViews(f.lab.Name), f.ns(n.Name))
	if err != nil {
		script := &Manager{StateDir: DefaultStateDir}
		v, err = ns.OpenView(script.labViews(f.lab.Name), f.ns(n.Name))
	}
	must(t, err)
	defer v.Close()
	// The mounts of the private directories and /etc, from the view's
	// mountinfo (busybox's stat, in the VM, has no file system types).
	sh := `hostname; cat /etc/hostname /etc/hosts; awk '$5 ~ /^\/(run|tmp|etc|var\/log|var\/run)$/ {for (i = 7; i <= NF; i++) if ($i == "-") {print $5, $(i+1); break}}' /proc/self/mountinfo`
	for _, file := range n.Files {
		sh += fmt.Sprintf("; stat -c '%%n %%a %%u:%%g %%s' %s; cat %s", file.Path, file.Path)
	}
	out, err := deployed.RunIn(context.Background(), x, v, "", "/bin/sh", "-c", sh)
	if err != nil {
		t.Fatalf("view of %s: %v: %s", n.Name, err, out)
	}
	return string(out)
}

// queues reads each interface's queues (counts, RPS and XPS masks,
// threaded NAPI, GRO, TSO) from a thread that sees the node's sysfs, and
// the CPUs its napi kthreads may run on.
func queues(t *testing.T, f *fixture, node string, links map[int]netlink.Link) map[string]string {
	t.Helper()
	n, err := ns.Open(f.m.netnsDir(), f.ns(node))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	out := map[string]string{}
	err = n.DoSysfs(func() error {
		for _, l := range links {
			name := l.Attrs().Name
			if name == "lo" || l.Type() == "bridge" {
				continue
			}
			q := inspect.ReadQueues(name)
			out[name] = fmt.Sprintf("%+v napi-cpus=%s", *q, napiAffinity(name, f.napiBefore))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// napiAffinity lists the allowed CPUs of the napi kthreads of interfaces
// named ifc (in any namespace) that are not among old.
func napiAffinity(ifc string, old map[int]string) string {
	var out []string
	for pid, comm := range napiThreads() {
		if _, seen := old[pid]; !seen && strings.HasPrefix(comm, "napi/"+ifc+"-") {
			var set unix.CPUSet
			unix.SchedGetaffinity(pid, &set)
			var cpus []int
			for c := 0; c < 1024; c++ {
				if set.IsSet(c) {
					cpus = append(cpus, c)
				}
			}
			out = append(out, fmt.Sprint(cpus))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// vethPeer names a veth end's peer as node:interface: the link in the lab
// whose index is this end's IFLA_LINK and whose IFLA_LINK is this end.
func vethPeer(byIndex map[string]map[int]netlink.Link, node string, a *netlink.LinkAttrs) string {
	var found []string
	for other, idx := range byIndex {
		if p, ok := idx[a.ParentIndex]; ok && p.Attrs().ParentIndex == a.Index && (other != node || p.Attrs().Index != a.Index) {
			found = append(found, other+":"+p.Attrs().Name)
		}
	}
	sort.Strings(found)
	return strings.Join(found, "|")
}

func compareSnapshots(t *testing.T, want, got map[string]string) {
	t.Helper()
	diffSnapshots(t, want, got, "nslab", "the script")
}

// diffSnapshots reports where two snapshots differ, naming what built
// each (wantBy, gotBy).
func diffSnapshots(t *testing.T, want, got map[string]string, wantBy, gotBy string) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	diffs := 0
	for _, k := range keys {
		w, inW := want[k]
		g, inG := got[k]
		switch {
		case !inG:
			t.Errorf("%s: %s built %s; %s did not", k, wantBy, w, gotBy)
		case !inW:
			t.Errorf("%s: %s built %s; %s did not", k, gotBy, g, wantBy)
		case w != g:
			t.Errorf("%s:\n  %s: %s\n  %s: %s", k, wantBy, w, gotBy, g)
		default:
			continue
		}
		if diffs++; diffs > 40 {
			t.Fatal("too many differences")
		}
	}
	t.Logf("compared %d objects", len(keys))
}

// kindSnapshot is what a made interface's kind adds to its description:
// a macvlan's mode, a VLAN's ID and protocol, a bond's mode and link
// monitoring, a VRF's table, and what each is made over.
func kindSnapshot(l netlink.Link, name func(int) string) string {
	switch k := l.(type) {
	case *netlink.Macvlan:
		return fmt.Sprintf(" macvlan-mode=%v parent=%s", k.Mode, name(k.ParentIndex))
	case *netlink.Vlan:
		return fmt.Sprintf(" vlan-id=%d proto=%v parent=%s", k.VlanId, k.VlanProtocol, name(k.ParentIndex))
	case *netlink.Bond:
		return fmt.Sprintf(" bond-mode=%v miimon=%d", k.Mode, k.Miimon)
	case *netlink.Vrf:
		return fmt.Sprintf(" vrf-table=%d", k.Table)
	}
	return ""
}

// rulesSnapshot is a node's policy routing rules of both IP families.
func rulesSnapshot(t *testing.T, h *netlink.Handle) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rules, err := h.RuleList(fam)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			out[fmt.Sprintf("%d/%d/%v/%v/%s", fam, r.Priority, r.Src, r.Dst, r.IifName)] = fmt.Sprintf("table=%d oif=%s type=%d", r.Table, r.OifName, r.Type)
		}
	}
	return out
}

// bridgeVLANs is the VLANs of every bridge port of a node (none where the
// kernel has no bridge VLAN filtering).
func bridgeVLANs(t *testing.T, h *netlink.Handle, name func(int) string) map[string]string {
	t.Helper()
	vlans, err := h.BridgeVlanList()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for idx, vs := range vlans {
		var s []string
		for _, v := range vs {
			s = append(s, fmt.Sprintf("%d:%#x", v.Vid, v.Flags))
		}
		out[name(int(idx))] = strings.Join(s, " ")
	}
	return out
}

// TestPrivilegedScriptStartsDaemons runs the BGP pair's deploy script: it
// starts FRR in r1 and BIRD in r2 in their views, as nslab does (vtysh and
// birdc answer there, each daemon carrying the lab's service mark), and
// the destroy script stops them and leaves no namespace or view.
func TestPrivilegedScriptStartsDaemons(t *testing.T) {
	skipWithoutShellTools(t)
	for _, bin := range []string{"vtysh", "bird", "nsenter", "unshare", "taskset"} {
		if _, err := exec.LookPath(bin); err != nil {
			// The VM has none of the daemons; make test installs them
			// on the host, where cmd/nslab's routing tests need them too.
			t.Skipf("%s is missing (make test installs frr, bird2 and util-linux on the host)", bin)
		}
	}
	f := newFixture(t, "bgp-pair.yaml")
	runScript(t, DeployScript(f.lab, ""))
	t.Cleanup(func() { _, _ = f.m.Destroy(f.lab.Name); _ = (&Manager{}).removeViews(f.lab.Name) })
	script := &Manager{StateDir: DefaultStateDir}
	for node, argv := range map[string][]string{"r1": {"vtysh", "-c", "show daemons"}, "r2": {"birdc", "-s", deployed.BIRDCtl, "show", "status"}} {
		x, err := ns.Open(f.m.netnsDir(), f.ns(node))
		must(t, err)
		v, err := ns.OpenView(script.labViews(f.lab.Name), f.ns(node))
		must(t, err)
		out, err := deployed.RunIn(context.Background(), x, v, "", argv...)
		x.Close()
		v.Close()
		if err != nil || !strings.Contains(string(out), map[string]string{"r1": "bgpd", "r2": "Daemon is up"}[node]) {
			t.Errorf("%s in %s after the script: %v: %s", argv[0], node, err, out)
		}
	}
	if n := len(markedProcesses(f.lab.Name)); n != 4 {
		t.Errorf("%d processes carry the lab's mark, want zebra, staticd, bgpd and bird", n)
	}
	runScript(t, DestroyScript(f.lab, nil, "", f.m.StateDir))
	if left := f.left(); len(left) > 0 {
		t.Errorf("the destroy script left namespaces %v", left)
	}
	for deadline := time.Now().Add(stopBound); len(markedProcesses(f.lab.Name)) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // killed, and exiting
	}
	if n := len(markedProcesses(f.lab.Name)); n != 0 {
		t.Errorf("%d daemons run %v after the destroy script killed them", n, stopBound)
	}
	if _, err := os.Stat(script.labViews(f.lab.Name)); err == nil {
		t.Errorf("the destroy script left the views in %s", script.labViews(f.lab.Name))
	}
}

// emptyMount reports whether dir is a mount point with nothing in it.
func emptyMount(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) > 0 {
		return false
	}
	info, err := os.ReadFile("/proc/self/mountinfo")
	return err == nil && strings.Contains(string(info), " "+dir+" ")
}
