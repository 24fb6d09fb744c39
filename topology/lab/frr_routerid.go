package lab

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/nslab/nslab/topology/spec"
)

// FRR's daemons take their router ID from zebra when their configuration
// sets none, and FRR 8's ospfd keeps the first one it gets. Loading
// frr.conf into every daemon at once (vtysh -b) hands zebra the
// interfaces' addresses and ospfd its `router ospf` within milliseconds,
// so ospfd often asks zebra before zebra has seen the loopback's address
// come back from the kernel, and keeps an interface's address for good:
// the same file gave router ID 10.10.10.1 on one deploy and 192.168.11.1
// on the next (containerlab's frr01, FRR 8.4). So zebra comes first: it
// and staticd start and take the file (vtysh skips the lines of daemons
// not running), the deploy waits until zebra holds every IPv4 address the
// file gives an interface as a connected route (zebra updates its router
// ID before it adds that route), and only then do the protocol daemons
// start and take the file in turn.

// zebraAddressRE is an interface's IPv4 address in frr.conf or zebra.conf.
var zebraAddressRE = regexp.MustCompile(`(?m)^\s*ip address (\d+\.\d+\.\d+\.\d+/\d+)`)

// zebraAddresses are the IPv4 prefixes node n's frr.conf and zebra.conf
// give its interfaces, as zebra's connected routes name them.
func zebraAddresses(n *spec.Node) []netip.Prefix {
	text := routingConfig(n, spec.FRRConfPath)
	if f := n.FileAt("/etc/frr/zebra.conf"); f != nil {
		text += "\n" + f.Text
	}
	var out []netip.Prefix
	for _, m := range zebraAddressRE.FindAllStringSubmatch(text, -1) {
		if p, err := netip.ParsePrefix(m[1]); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

// waitConnected waits, in node n, until zebra has a connected route for
// each of prefixes. An address that never comes (its interface missing
// or down) ends the wait after routingWait without an error: the
// protocol daemons then start with the router ID zebra has, as they would
// under FRR's own start.
func (d *deployer) waitConnected(n *spec.Node, tag string, prefixes []netip.Prefix) error {
	if len(prefixes) == 0 {
		return nil
	}
	err := d.waitAnswer(n, func() error {
		out, err := d.runInNode(n, tag, "vtysh", "-c", "show ip route connected json")
		if err != nil {
			return fmt.Errorf("vtysh: %w: %s", err, out)
		}
		var routes map[string]json.RawMessage
		if err := json.Unmarshal(out, &routes); err != nil {
			return fmt.Errorf("zebra's connected routes: %w", err)
		}
		for _, p := range prefixes {
			if _, ok := routes[p.String()]; !ok {
				return fmt.Errorf("zebra has no connected route %s yet", p)
			}
		}
		return nil
	})
	if err != nil && d.ctx.Err() != nil {
		return err
	}
	return nil
}

// shWaitConnected is waitConnected as shell lines (each wait bounded to
// 20 s, as routingWait bounds it), in is the nsenter prefix of the node.
func shWaitConnected(in string, prefixes []netip.Prefix) []string {
	var out []string
	for _, p := range prefixes {
		out = append(out, fmt.Sprintf("for i in $(seq 200); do %s vtysh -c 'show ip route %s json' | grep -q '\"connected\"' && break; sleep 0.1; done", in, p))
	}
	return out
}
