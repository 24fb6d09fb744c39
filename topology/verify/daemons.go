package verify

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nslab/nslab/topology/spec"
)

// BIRDSocket is BIRD's control socket in a node (as nslab starts it).
const BIRDSocket = "/run/bird/bird.ctl"

// vtysh runs one vtysh command in the node and decodes its JSON.
func (c *Checker) vtysh(node, command string, v any) error {
	out, err := c.Command(node, "vtysh", "-c", command)
	if err != nil {
		return fmt.Errorf("vtysh -c %q in %s: %w: %s", command, node, err, strings.TrimSpace(string(out)))
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("vtysh -c %q in %s did not answer JSON (%w): %s", command, node, err, firstLine(out))
	}
	return nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// bgpNeighbor is what FRR's show bgp neighbors NEIGH json says of one.
type bgpNeighbor struct {
	State    string `json:"bgpState"`
	Families map[string]struct {
		Accepted int `json:"acceptedPrefixCounter"`
	} `json:"addressFamilyInfo"`
}

// bgp reads the session's state and the prefixes received from FRR.
func (c *Checker) bgp(t *spec.Test) (result, error) {
	var out map[string]bgpNeighbor
	if err := c.vtysh(t.Node, "show bgp neighbors "+t.Addr.String()+" json", &out); err != nil {
		return result{}, err
	}
	nb, ok := out[t.Addr.String()]
	if !ok {
		return result{measured: fmt.Sprintf("FRR in %s has no BGP neighbour %s", t.Node, t.Addr)}, nil
	}
	got := 0
	for _, f := range nb.Families {
		got += f.Accepted
	}
	measured := fmt.Sprintf("%s, %d prefixes received", nb.State, got)
	return result{pass: strings.EqualFold(nb.State, t.WantState()) && (t.Prefixes < 0 || got >= t.Prefixes), measured: measured}, nil
}

// bgpRoute reads the prefix's BGP paths from FRR: it must have a best
// path, with the AS path asked.
func (c *Checker) bgpRoute(t *spec.Test) (result, error) {
	afi := "ipv4"
	if t.Prefix.Addr().Is6() {
		afi = "ipv6"
	}
	var out struct {
		Paths []struct {
			ASPath struct {
				String string `json:"string"`
			} `json:"aspath"`
			Best struct {
				Overall bool `json:"overall"`
			} `json:"bestpath"`
		} `json:"paths"`
	}
	if err := c.vtysh(t.Node, fmt.Sprintf("show bgp %s unicast %s json", afi, t.Prefix), &out); err != nil {
		return result{}, err
	}
	var seen []string
	for _, p := range out.Paths {
		seen = append(seen, fmt.Sprintf("AS path %q", p.ASPath.String))
		if p.Best.Overall && (t.ASPath == "" || p.ASPath.String == t.ASPath) {
			return result{pass: true, measured: fmt.Sprintf("best path, AS path %q", p.ASPath.String)}, nil
		}
	}
	if len(seen) == 0 {
		return result{measured: fmt.Sprintf("FRR in %s has no BGP path to %s", t.Node, t.Prefix)}, nil
	}
	return result{measured: strings.Join(seen, "; ")}, nil
}

// ospf reads the neighbour's adjacency state from FRR's ospfd or ospf6d;
// a neighbour missing is reported with those the daemon has.
func (c *Checker) ospf(t *spec.Test) (result, error) {
	states, err := c.ospfStates(t)
	if err != nil {
		return result{}, err
	}
	state, ok := states[t.RouterID]
	if !ok {
		var have []string
		for _, id := range slices.Sorted(maps.Keys(states)) {
			have = append(have, id+" "+states[id])
		}
		m := fmt.Sprintf("FRR in %s has no %s neighbour %s", t.Node, strings.ToUpper(t.Kind), t.RouterID)
		if len(have) > 0 {
			m += " (its neighbours: " + strings.Join(have, ", ") + ")"
		}
		return result{measured: m}, nil
	}
	head, _, _ := strings.Cut(state, "/") // Full/DR: the adjacency, then the neighbour's role
	return result{pass: strings.EqualFold(head, t.WantState()), measured: state}, nil
}

// ospfStates are the daemon's neighbours' states as FRR writes them, by
// router ID.
func (c *Checker) ospfStates(t *spec.Test) (map[string]string, error) {
	states := map[string]string{}
	if t.Kind == "ospf6" {
		var out struct {
			Neighbors []struct {
				ID    string `json:"neighborId"`
				State string `json:"state"`
			} `json:"neighbors"`
		}
		if err := c.vtysh(t.Node, "show ipv6 ospf6 neighbor json", &out); err != nil {
			return nil, err
		}
		for _, n := range out.Neighbors {
			states[n.ID] = n.State
		}
		return states, nil
	}
	var out struct {
		Neighbors map[string][]struct {
			State string `json:"nbrState"`
			Newer string `json:"state"`
		} `json:"neighbors"`
	}
	if err := c.vtysh(t.Node, "show ip ospf neighbor json", &out); err != nil {
		return nil, err
	}
	for id, nbs := range out.Neighbors {
		if len(nbs) > 0 {
			states[id] = cmp.Or(nbs[0].State, nbs[0].Newer)
		}
	}
	return states, nil
}

// bird reads the protocol's state from birdc show protocols. BIRD has no
// JSON output: its protocol table's columns are fixed (Name, Proto,
// Table, State, Since, Info), and the state is the fourth.
func (c *Checker) bird(t *spec.Test) (result, error) {
	out, err := c.Command(t.Node, "birdc", "-s", BIRDSocket, "show", "protocols", t.Protocol)
	if err != nil {
		return result{}, fmt.Errorf("birdc in %s: %w: %s", t.Node, err, strings.TrimSpace(string(out)))
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == t.Protocol {
			info := strings.Join(f[min(5, len(f)):], " ") // after Since
			measured := f[3]
			if info != "" {
				measured += " (" + info + ")"
			}
			return result{pass: strings.EqualFold(f[3], t.WantState()), measured: measured}, nil
		}
	}
	return result{measured: fmt.Sprintf("BIRD in %s has no protocol %s (%s)", t.Node, t.Protocol, firstLine(out))}, nil
}

// traffic benches the run and compares its figures.
func (c *Checker) traffic(ctx context.Context, t *spec.Test) (result, error) {
	if c.Traffic == nil {
		return result{}, fmt.Errorf("traffic tests need the bench, which this checker was not given")
	}
	m, err := c.Traffic(ctx, t)
	if err != nil {
		return result{}, err
	}
	pass := true
	var parts []string
	if t.MaxLoss >= 0 {
		pass = pass && m.LossPercent <= t.MaxLoss
		parts = append(parts, fmt.Sprintf("loss %.3f%% (%d of %d)", m.LossPercent, m.Sent-m.Received, m.Sent))
	}
	if t.MinRate > 0 {
		pass = pass && m.RatePPS >= float64(t.MinRate)
		parts = append(parts, fmt.Sprintf("received %.0f pps", m.RatePPS))
	}
	if t.MaxP99 > 0 {
		pass = pass && m.P99 > 0 && m.P99 <= t.MaxP99
		parts = append(parts, fmt.Sprintf("p99 %v", m.P99))
	}
	return result{pass: pass, measured: strings.Join(parts, ", ")}, nil
}

// expected is what the test asks, in a line.
func expected(t *spec.Test) string {
	switch t.Kind {
	case "reachable":
		return "an answer"
	case "unreachable":
		return "no answer"
	case "route":
		s := "a route to " + t.Prefix.String()
		if t.Via.IsValid() {
			s += " via " + t.Via.String()
		}
		if t.Dev != "" {
			s += " dev " + t.Dev
		}
		if t.Protocol != "" {
			s += " proto " + t.Protocol
		}
		return s
	case "address":
		return t.Prefix.String()
	case "neighbour":
		return "resolved"
	case "bgp":
		if t.Prefixes >= 0 {
			return fmt.Sprintf("%s, at least %d prefixes", t.WantState(), t.Prefixes)
		}
		return t.WantState()
	case "bgp-route":
		if t.ASPath != "" {
			return fmt.Sprintf("a best path, AS path %q", t.ASPath)
		}
		return "a best path"
	case "traffic":
		return trafficExpected(t)
	}
	return t.WantState()
}

func trafficExpected(t *spec.Test) string {
	var parts []string
	if t.MaxLoss >= 0 {
		parts = append(parts, fmt.Sprintf("loss <= %g%%", t.MaxLoss))
	}
	if t.MinRate > 0 {
		parts = append(parts, fmt.Sprintf("received >= %d pps", t.MinRate))
	}
	if t.MaxP99 > 0 {
		parts = append(parts, fmt.Sprintf("p99 <= %v", t.MaxP99))
	}
	s := strings.Join(parts, ", ")
	if t.Rate != "" {
		s += " at " + t.Rate
	}
	return s
}
