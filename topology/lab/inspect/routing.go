package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nslab/nslab/topology/spec"
)

// What inspect shows of a node's routing daemons: each daemon running or
// not (its processes, found by the lab's mark), and what the daemons say
// of their neighbours and sessions (vtysh's JSON, birdc's protocols).

// RoutingInfo is a node's routing daemons as they are now.
type RoutingInfo struct {
	Suite    string        `json:"suite"` // frr or bird
	Daemons  []DaemonInfo  `json:"daemons"`
	Sessions []SessionInfo `json:"sessions"`
	Error    string        `json:"error,omitempty"` // why the sessions could not be read
}

// DaemonInfo is one daemon of a node.
type DaemonInfo struct {
	Name    string `json:"name"`
	Running bool   `json:"running"`
	PID     int    `json:"pid,omitempty"`
}

// SessionInfo is one neighbour or session of a daemon.
type SessionInfo struct {
	Protocol string `json:"protocol"` // ospf, bgp
	Neighbor string `json:"neighbor"`
	State    string `json:"state"`
	// Routes is what the session gave (BGP prefixes received, BIRD routes
	// imported); -1 when the daemon does not say.
	Routes int `json:"routes"`
}

// FRRSessions reads OSPF neighbours and BGP peers from vtysh's JSON.
func FRRSessions(query func(...string) ([]byte, error), f *spec.FRR) ([]SessionInfo, error) {
	var out []SessionInfo
	if slices.Contains(f.Daemons, "ospfd") {
		b, err := query("vtysh", "-c", "show ip ospf neighbor json")
		if err != nil {
			return nil, fmt.Errorf("vtysh: %w: %s", err, bytes.TrimSpace(b))
		}
		var doc struct {
			Neighbors map[string][]struct {
				State string `json:"nbrState"`
				Iface string `json:"ifaceName"`
			} `json:"neighbors"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("show ip ospf neighbor json: %w", err)
		}
		for id, ns := range doc.Neighbors {
			for _, n := range ns {
				out = append(out, SessionInfo{Protocol: "ospf", Neighbor: id + " on " + strings.SplitN(n.Iface, ":", 2)[0], State: n.State, Routes: -1})
			}
		}
	}
	if slices.Contains(f.Daemons, "ospf6d") {
		s, err := ospf6Neighbors(query)
		if err != nil {
			return nil, err
		}
		out = append(out, s...)
	}
	for _, rip := range []struct{ daemon, cmd, proto string }{{"ripd", "show ip rip status", "rip"}, {"ripngd", "show ipv6 ripng status", "ripng"}} {
		if slices.Contains(f.Daemons, rip.daemon) {
			b, err := query("vtysh", "-c", rip.cmd)
			if err != nil {
				return nil, fmt.Errorf("vtysh: %w: %s", err, bytes.TrimSpace(b))
			}
			out = append(out, ripSources(b, rip.proto)...)
		}
	}
	if slices.Contains(f.Daemons, "bgpd") {
		b, err := query("vtysh", "-c", "show bgp summary json")
		if err != nil {
			return nil, fmt.Errorf("vtysh: %w: %s", err, bytes.TrimSpace(b))
		}
		var doc map[string]struct {
			Peers map[string]struct {
				State  string `json:"state"`
				PfxRcd int    `json:"pfxRcd"`
			} `json:"peers"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("show bgp summary json: %w", err)
		}
		for af, s := range doc {
			for peer, p := range s.Peers {
				out = append(out, SessionInfo{Protocol: "bgp " + af, Neighbor: peer, State: p.State, Routes: p.PfxRcd})
			}
		}
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return strings.Compare(a.Protocol+a.Neighbor, b.Protocol+b.Neighbor) })
	return out, nil
}

// ospf6Neighbors reads OSPFv3 neighbours from vtysh's JSON.
func ospf6Neighbors(query func(...string) ([]byte, error)) ([]SessionInfo, error) {
	b, err := query("vtysh", "-c", "show ipv6 ospf6 neighbor json")
	if err != nil {
		return nil, fmt.Errorf("vtysh: %w: %s", err, bytes.TrimSpace(b))
	}
	var doc struct {
		Neighbors []struct {
			ID    string `json:"neighborId"`
			State string `json:"state"`
			Iface string `json:"interfaceName"`
		} `json:"neighbors"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("show ipv6 ospf6 neighbor json: %w", err)
	}
	var out []SessionInfo
	for _, n := range doc.Neighbors {
		out = append(out, SessionInfo{Protocol: "ospf6", Neighbor: n.ID + " on " + n.Iface, State: n.State, Routes: -1})
	}
	return out, nil
}

// ripSources reads the neighbours RIP (or RIPng) hears from, from the
// "Routing Information Sources" of vtysh's status (FRR 8.4 gives it no
// JSON): each gateway, with the time since its last update as the state.
func ripSources(b []byte, proto string) []SessionInfo {
	var out []SessionInfo
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case strings.Contains(line, "Routing Information Sources"):
			in = true
		case !in || len(f) == 0 || f[0] == "Gateway":
		case len(f) >= 5 && strings.ContainsAny(f[0], ".:"):
			out = append(out, SessionInfo{Protocol: proto, Neighbor: f[0], State: "update " + f[len(f)-1] + " ago", Routes: -1})
		default:
			in = false // the next section
		}
	}
	return out
}

// BIRDSessions reads BIRD's BGP and OSPF protocols from birdc: each one's
// state and info, and the routes its channel imported.
func BIRDSessions(query func(...string) ([]byte, error), ctl string) ([]SessionInfo, error) {
	b, err := query("birdc", "-s", ctl, "show", "protocols", "all")
	if err != nil {
		return nil, fmt.Errorf("birdc: %w: %s", err, bytes.TrimSpace(b))
	}
	var out []SessionInfo
	var cur *SessionInfo
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 4 && !strings.HasPrefix(line, " ") && (f[1] == "BGP" || f[1] == "OSPF"):
			state := f[3]
			if len(f) >= 6 {
				state = f[5]
			}
			out = append(out, SessionInfo{Protocol: strings.ToLower(f[1]), Neighbor: f[0], State: state, Routes: -1})
			cur = &out[len(out)-1]
		case len(f) == 0:
			cur = nil
		case cur != nil && f[0] == "Neighbor" && len(f) >= 3 && f[1] == "address:":
			cur.Neighbor += " (" + f[2] + ")"
		case cur != nil && f[0] == "Routes:" && len(f) >= 2:
			cur.Routes, _ = strconv.Atoi(f[1])
		}
	}
	return out, nil
}
