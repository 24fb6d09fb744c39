package lab

import (
	"strings"

	"github.com/nslab/nslab/topology/spec"
)

// insideKinds are the deploy steps that change a node from inside its
// namespace: its made interfaces (macvlan, VLAN, bond, VRF), sysctls,
// bridges, addresses, impairments, routes and rules, NAT and firewall
// rules and one-shot commands.
var insideKinds = []stepKind{namespaceSteps, madeSteps, bridgeSteps, nodeSettingSteps, addressSteps, impairSteps, routeSteps, ruleSteps, netfilterSteps, execSteps}

// InsideCommands returns, node by node, the shell lines of the deploy
// steps that change a node from the inside, rewritten to run inside the
// node ("ip -n gw addr add ..." becomes "ip addr add ..."), in nslab's
// order. It leaves out what a container runtime does itself (namespaces,
// links and their MACs and MTUs), nslab's markers, the waits for links,
// what acts on the host (CPU placement, SR-IOV) and services, which
// nslab starts and watches itself.
func InsideCommands(l *spec.Lab) map[string][]string {
	node := make(map[string]string, len(l.Nodes))
	for _, n := range l.Nodes {
		node[l.Namespace(n.Name)] = n.Name
	}
	out := map[string][]string{}
	for _, kind := range insideKinds {
		for _, s := range kind(l, "") {
			for _, line := range s.Shell() {
				if ns, cmd, ok := inside(line); ok && node[ns] != "" {
					out[node[ns]] = append(out[node[ns]], cmd)
				}
			}
		}
	}
	return out
}

// inside splits a script line into the namespace it runs in and the
// command as run there. It refuses the lines that create the namespace,
// mark objects as nslab's or wait.
func inside(line string) (ns, cmd string, ok bool) {
	if strings.Contains(line, " alias nslab:") {
		return "", "", false
	}
	f := strings.SplitN(line, " ", 5)
	switch {
	case len(f) >= 4 && f[0] == "ip" && f[1] == "netns" && f[2] == "exec":
		return f[3], strings.Join(f[4:], " "), true
	case len(f) >= 4 && (f[0] == "ip" || f[0] == "tc" || f[0] == "bridge") && f[1] == "-n":
		return f[2], f[0] + " " + strings.Join(f[3:], " "), true
	}
	return "", "", false
}
