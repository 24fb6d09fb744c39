package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// verbHelp is the description and examples of each verb that does not
// give them in its own definition: what --help, the man pages and
// docs/commands/ say beyond the one-line usage (TestEveryVerbHasHelp
// checks every verb has both).
var verbHelp = map[string]struct {
	Description string
	Examples    []string
}{
	"deploy": {"Builds every namespace, link, address, route, rule, impairment, NAT and firewall rule and service of the lab,\n" +
		"through netlink, in the order the plan gives (--dry-run prints it as an iproute2 script). It is atomic: a step\n" +
		"that fails, or Ctrl-C, removes everything created so far. Before changing anything it checks that the lab is\n" +
		"not deployed, that its namespace names are free and that the kernel has every kind of device and qdisc it uses.",
		[]string{"nslab deploy examples/client-router-server.yaml", "nslab deploy --dry-run examples/policy-routing.yaml > lab.sh", "nslab deploy --host a examples/two-hosts.yaml",
			"nslab deploy examples/three-hosts.yaml   # every host over ssh, from here"}},
	"agent": {"Serves one coordinator on its standard input and output, one JSON request per line: nslab starts it\n" +
		"over ssh on each host of a lab that spans hosts (each host's ssh: in the file, or --inventory), and it\n" +
		"opens no listener. It checks that the coordinator's plan is the one it computes from the same file, then\n" +
		"runs nslab's verbs on its host's share as `nslab --host HOST VERB` would, and probes the underlay's MTU\n" +
		"with DF set. When the coordinator goes, a verb in progress is interrupted as by Ctrl-C.",
		[]string{"ssh root@192.0.2.2 nslab agent   # what nslab deploy examples/three-hosts.yaml runs on host b"}},
	"test": {"Checks a deployed lab against its file's tests: (reachability and its absence, routes, addresses,\n" +
		"neighbours, FRR's BGP and OSPF state from vtysh's JSON, BIRD's protocols, a traffic run's loss, rate and\n" +
		"latency), each tried again until it passes or its wait: is over. A lab that is not deployed is deployed\n" +
		"first and destroyed after (unless --keep). Prints each test with what was expected, what was measured and\n" +
		"where; exits 0 only if every test passed. --junit writes JUnit XML for CI, --tap prints TAP.",
		[]string{"nslab test examples/client-router-server.yaml", "nslab test --junit results.xml examples/ospf-ring.yaml", "nslab test --format json examples/bgp-pair.yaml"}},
	"destroy": {"Removes everything the lab's state file records, and what carries the lab's marker when the state is\n" +
		"damaged or gone; it never touches what nslab did not create. Re-running it is harmless.",
		[]string{"nslab destroy -t examples/client-router-server.yaml", "nslab destroy --name crs", "nslab destroy --all --wait"}},
	"inspect": {"Reads a deployed lab back from the kernel: each node's interfaces (kind, peer, MAC, MTU, state,\n" +
		"addresses), queues and CPU placement, impairments, NAT and firewall counters, services, routes of every\n" +
		"table and policy rules. Without a lab, lists the deployed labs.",
		[]string{"nslab inspect", "nslab inspect -t examples/client-router-server.yaml", "nslab inspect --name crs --format json"}},
	"exec": {"Runs a command inside a node's network namespace, as ip netns exec does, with /etc/netns/NS files\n" +
		"over /etc; the command's exit code is nslab's.",
		[]string{"nslab exec ns1 -- ping -c 3 10.0.2.1", "nslab exec --name crs ns2 -- ip route"}},
	"validate": {"Reads the lab file and reports every problem at once, each with its file:line:col and the fix,\n" +
		"without touching the machine.",
		[]string{"nslab validate examples/nat-router.yaml"}},
	"bench": {"Sends a traffic run of the file from its sender through the lab (deploying it first if needed, and\n" +
		"removing it after unless --keep), samples every hop's counters, and reports pps, Mb/s and loss hop by hop,\n" +
		"each lost packet where it died, and a verdict on what limited the run. --search finds NDR and PDR by\n" +
		"MLRsearch, --rfc2544 runs RFC 2544's four benchmarks, --variants compares variants of the lab in\n" +
		"alternating rounds, --repeat gives every figure with its spread.",
		[]string{"nslab bench examples/forwarding-benchmark.yaml", "nslab bench --search --repeat 3 examples/forwarding-benchmark.yaml",
			"nslab bench --latency --rate 100kpps examples/client-router-server.yaml", "nslab bench --variants nat,plain examples/nat-router.yaml",
			"nslab bench --out a.jsonl --format json examples/pair.yaml"}},
	"graph": {"Draws the lab from its file, with addresses, routes and rules: boxes and lines for the terminal,\n" +
		"Graphviz dot or Mermaid.",
		[]string{"nslab graph examples/two-routers.yaml", "nslab graph --format dot examples/switch.yaml | dot -Tsvg > lab.svg"}},
	"path": {"Walks a packet from a node to an address through the file's routes, policy rules, NAT and\n" +
		"firewalls, hop by hop with each next hop's MAC; on a deployed lab the kernel's route lookup confirms\n" +
		"every hop.",
		[]string{"nslab path examples/client-router-server.yaml ns1 10.0.2.1", "nslab path --proto tcp --port 80 examples/nat-router.yaml lan 172.30.0.2"}},
	"check": {"Pings every address of a deployed lab from every node and compares each answer with what the\n" +
		"lab's routes, NAT and firewalls say; it fails when a pair that should answer does not, or one that\n" +
		"should not does.",
		[]string{"nslab check examples/client-router-server.yaml", "nslab check --format list --tries 3 examples/two-routers.yaml"}},
	"impair": {"Sets what a deployed lab's link does to what one interface sends (netem delay, jitter, loss,\n" +
		"duplication, reordering, corruption; a rate as tbf), or clears it.",
		[]string{"nslab impair ns2:veth2 --delay 20ms --loss 1%", "nslab impair ns2:veth2 --rate 10Mbit", "nslab impair ns2:veth2 --clear"}},
	"link": {"Takes an interface of a deployed lab down (its link fails) or brings it up.",
		[]string{"nslab link down r1:eth1", "nslab link up crs:ns2:veth2"}},
	"apply": {"Makes a deployed lab what its edited file says, changing only what differs: the deployed lab's\n" +
		"steps the file no longer has are taken back, the file's new ones made; what works on something made again\n" +
		"(an address on a link made again, a service in a view made again) is made again with it, and a change only\n" +
		"rebuilding a node takes back (an exec line, CPU placement) rebuilds that node. A failing step takes back\n" +
		"what the apply did; a killed apply is finished by the next, or cleaned by destroy.",
		[]string{"nslab apply examples/client-router-server.yaml", "nslab apply --dry-run lab.yaml"}},
	"node": {"Stops a node of a deployed lab as a router fails: its links go down at both ends and every process in\n" +
		"it stops (services, routing daemons); its interfaces, addresses, files and limits stay. start brings the links up\n" +
		"(but towards nodes stopped too), puts the file's routes through them back, and starts its daemons and services\n" +
		"again. inspect, top and web show it stopped meanwhile.",
		[]string{"nslab node stop r1", "nslab node start crs:r1"}},
	"top": {"Shows a deployed lab live in the terminal, refreshed every --interval: each interface's rx and tx\n" +
		"pps, Mb/s and drops (its qdisc's apart), each CPU's busy, softirq and steal shares and backlog drops, and\n" +
		"each node that forwards, discards or tracks connections; and the bench that runs on the lab, from another\n" +
		"terminal. Keys: n, r, t and d sort the interfaces by node, rx, tx or drops; s cycles; q quits.\n" +
		"--once prints one interval's reading, as a table or JSON, for scripts.",
		[]string{"nslab top", "nslab top crs --sort drops", "nslab top --once --format json crs"}},
	"web": {"Serves a page of a deployed lab on --listen (loopback unless named): the lab's drawing with each link\n" +
		"labelled and coloured by its live rates and drops, with a sparkline, each placed node coloured by its CPUs,\n" +
		"each CPU's softirq, steal and backlog drops, and the bench that runs on the lab, with its report and\n" +
		"verdict when it ends; /metrics as nslab metrics serves it. Server-sent events feed the page; everything\n" +
		"it loads comes from the server. It closes the lab's namespaces when the lab is destroyed, and picks the\n" +
		"lab up again when it is deployed again. The nslab-web helper (next to nslab or on PATH) serves it. Given\n" +
		"the FILE of a lab over hosts, it serves the whole lab from here, each host's part read by its agent.",
		[]string{"nslab web crs", "nslab web --listen 127.0.0.1:8081 examples/three-hosts.yaml", "nslab web --listen 127.0.0.1:8081 --interval 500ms crs", "nslab web --listen 0.0.0.0:8080 crs"}},
	"metrics": {"Serves the counters of the labs named (all deployed labs when none is) at /metrics, in OpenMetrics or\n" +
		"Prometheus' text format as the scraper asks: each interface's packets, bytes, drops and errors and its\n" +
		"qdisc's drops, labelled lab, node and interface; softnet and CPU time per CPU; each node's IP MIB and\n" +
		"conntrack; and while a bench runs, its hops' rates. Each scrape reads the kernel afresh. The nslab-web\n" +
		"helper (next to nslab or on PATH) serves it.",
		[]string{"nslab metrics", "nslab metrics --listen 127.0.0.1:9477 crs"}},
	"generate": {"Writes a lab file of a common shape (chain, star, tree, mesh, clos) and any size, with the routes\n" +
		"that make every address reachable when asked.",
		[]string{"nslab generate chain --n 5 --routes > chain.yaml", "nslab generate clos --n 8 --spines 2 --routes"}},
	"export": {"", []string{"nslab export examples/two-routers.yaml > two-routers.clab.yml"}},
}

// withHelp gives each command its description (kept where the command
// has its own) and its examples.
func withHelp(cmds []*cli.Command) []*cli.Command {
	for _, c := range cmds {
		h := verbHelp[c.Name]
		if c.Description == "" {
			c.Description = h.Description
		}
		if len(h.Examples) > 0 && !strings.Contains(c.Description, "Examples") {
			c.Description += "\n\nExamples:\n  " + strings.Join(h.Examples, "\n  ")
		}
	}
	return cmds
}
