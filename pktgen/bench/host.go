package bench

import (
	"github.com/nslab/nslab/pktgen/bench/account"
	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/softirq"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/xdpfwd"
)

// What a run reads besides interface counters: CPU times and softnet per
// CPU (machine-wide files, read in the caller's namespace), and each
// router's IP counters (per namespace, read from a thread inside it).

// hostState is one reading of those.
type hostState struct {
	cpu     map[int][]uint64
	softnet map[int][]uint64
	mib     map[string]map[string]uint64 // router node -> Ip: counter -> value
	ct      map[string]map[string]uint64 // router node -> nf_conntrack column -> value (nil: none)
	softirq *softirq.Reading             // every CPU's softirq time (nil: no counter)
	devices map[string][]softirq.DevTime // what the routers' ingress packets cost so far, by interface, per CPU
	xdp     map[string]xdpfwd.Counts     // router node -> its XDP fast path's counters (none: no fast path)
}

// snapshot reads the host state; routers maps router nodes to their open
// namespaces; c is the softirq time counters.
func snapshot(routers map[string]*ns.NS, c *costing) (hostState, error) {
	h := hostState{cpu: kstat.CPUTimes(), softnet: kstat.Softnet(), mib: map[string]map[string]uint64{}, ct: map[string]map[string]uint64{},
		xdp: map[string]xdpfwd.Counts{}}
	var err error
	if h.softirq, h.devices, err = c.read(); err != nil {
		return h, err
	}
	for node, n := range routers {
		var err error
		if h.mib[node], h.ct[node], err = kstat.RouterCounters(n); err != nil {
			return h, err
		}
		if c, err := xdpfwd.ReadNode(n); err != nil {
			return h, err
		} else if c != nil {
			h.xdp[node] = c
		}
	}
	return h, nil
}

// routers is h's reading of the routers' own counters, as the accounting
// takes it.
func (h hostState) routers() account.RouterState {
	return account.RouterState{MIB: h.mib, CT: h.ct, XDP: h.xdp}
}
