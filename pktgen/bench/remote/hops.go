package remote

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nslab/nslab/pktgen/measured"
	"github.com/nslab/nslab/pktgen/report"
)

// Hops is, on the sender's host, the path's hops on other hosts, read
// through a Transport. A host that stops answering during a run is
// noted as lost (Lost), and its hops keep the counters of its last
// answer: the run is reported with what was read up to then.
type Hops struct {
	t       Transport
	targets []measured.Target // in path order, each with its Host
	byHost  map[string][]int  // indexes into targets
	hosts   []string

	mu   sync.Mutex
	last map[string]Reply // each host's last answer to OpRead
	ctl  map[string]Reply // and to OpControl
	when map[string]time.Time
	lost map[string]report.LostHost
	// clock is each host's clock against this one's, from the answer of
	// the shortest round trip so far.
	clock map[string]report.HostClock
}

// Open asks each host of targets to open its hops (roles: each target's
// role; across: those whose next hop on the path is on another host), the
// routers there among routers, and the sink when the receiver (the last
// target) is there. Every target must have its Host.
func Open(t Transport, targets []measured.Target, roles []string, across []bool, routers []string, sink *Sink) (*Hops, error) {
	h := &Hops{t: t, targets: targets, byHost: map[string][]int{}, last: map[string]Reply{}, ctl: map[string]Reply{}, when: map[string]time.Time{}, lost: map[string]report.LostHost{}, clock: map[string]report.HostClock{}}
	asks := map[string]Request{}
	for i, x := range targets {
		if x.Host == "" {
			return nil, fmt.Errorf("hop %s has no host", x)
		}
		if _, ok := h.byHost[x.Host]; !ok {
			h.hosts = append(h.hosts, x.Host)
		}
		h.byHost[x.Host] = append(h.byHost[x.Host], i)
		r := asks[x.Host]
		r.Op = OpOpen
		r.Hops = append(r.Hops, Hop{Node: x.Node, Interface: x.Interface, Role: roles[i], SendsAcross: across[i]})
		if sink != nil && i == len(targets)-1 {
			r.Sink = sink
			r.IPv6 = sink.IPv6
		}
		if slices.Contains(routers, x.Node) && !slices.Contains(r.Routers, x.Node) {
			r.Routers = append(r.Routers, x.Node)
		}
		asks[x.Host] = r
	}
	if _, err := h.askEach(asks, true); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// Hosts are the hosts whose hops are read, in path order.
func (h *Hops) Hosts() []string { return h.hosts }

// Targets are the hops read, in path order.
func (h *Hops) Targets() []measured.Target { return h.targets }

// Read is every hop's interface counters, in Targets' order.
func (h *Hops) Read() ([]measured.Counters, error) {
	answers, err := h.askEach(h.every(OpRead), false)
	if err != nil {
		return nil, err
	}
	out := make([]measured.Counters, len(h.targets))
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, host := range h.hosts {
		a, ok := answers[host]
		if ok && len(a.Counters) == len(h.byHost[host]) {
			h.last[host], h.when[host] = a, time.Now()
		} else if ok {
			h.loseLocked(host, fmt.Sprintf("it answered %d counters for %d hops", len(a.Counters), len(h.byHost[host])))
		}
		for k, i := range h.byHost[host] {
			if c := h.last[host].Counters; k < len(c) {
				out[i] = c[k]
			}
		}
	}
	return out, nil
}

// Control is one reading of the other hosts: the neighbour frames each
// hop received since it was opened (in Targets' order), the IP MIB and
// conntrack counters of the routers asked (by node), and each host's
// CPUs (by host).
type Control struct {
	// Counters are the hops' interface counters read with Received (nil
	// where a host answered none).
	Counters       []*measured.Counters
	Received, Sent []uint64
	MIB, CT        map[string]map[string]uint64
	Machines       map[string]Machine
}

// Control reads the other hosts now. A lost host's reading is that of
// its last answer.
func (h *Hops) Control() (Control, error) {
	answers, err := h.askEach(h.every(OpControl), false)
	if err != nil {
		return Control{}, err
	}
	c := Control{Counters: make([]*measured.Counters, len(h.targets)), Received: make([]uint64, len(h.targets)), Sent: make([]uint64, len(h.targets)), MIB: map[string]map[string]uint64{}, CT: map[string]map[string]uint64{}, Machines: map[string]Machine{}}
	h.mu.Lock()
	defer h.mu.Unlock()
	for host, a := range answers {
		h.ctl[host] = a
	}
	for host, a := range h.ctl {
		for k, i := range h.byHost[host] {
			if k < len(a.Received) {
				c.Received[i] = a.Received[k]
			}
			if k < len(a.Sent) {
				c.Sent[i] = a.Sent[k]
			}
			if len(a.Counters) == len(h.byHost[host]) {
				c.Counters[i] = &a.Counters[k]
			}
		}
		for n, m := range a.MIB {
			c.MIB[n] = m
		}
		for n, m := range a.CT {
			c.CT[n] = m
		}
		if a.Machine != nil {
			c.Machines[host] = *a.Machine
		}
	}
	return c, nil
}

// OpenReader starts the run's receiver's reader on host.
func (h *Hops) OpenReader(host string, a ReaderAsk) error {
	_, err := h.askEach(map[string]Request{host: {Op: OpLatencyOpen, Reader: &a}}, true)
	return err
}

// StopReader stops the receiver's reader on host and returns what it
// made of the run's packets.
func (h *Hops) StopReader(host string, q ArrivalsAsk) (Arrivals, error) {
	answers, err := h.askEach(map[string]Request{host: {Op: OpLatencyStop, Arrivals: &q}}, true)
	if err != nil {
		return Arrivals{}, err
	}
	if a := answers[host].Arrivals; a != nil {
		return *a, nil
	}
	return Arrivals{}, fmt.Errorf("host %s: its reader said nothing of the run's packets", host)
}

// Clock is host's clock against this one's (see Clocks).
func (h *Hops) Clock(host string) report.HostClock {
	if t, ok := h.t.(interface {
		Clocks() map[string]report.HostClock
	}); ok {
		if c, ok := t.Clocks()[host]; ok {
			return c
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.clock[host]
}

// Lost lists the hosts lost since Open, in path order.
func (h *Hops) Lost() []report.LostHost {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []report.LostHost
	for _, host := range h.hosts {
		if l, ok := h.lost[host]; ok {
			out = append(out, l)
		}
	}
	return out
}

// Close asks every host still answering to release its hops.
func (h *Hops) Close() {
	_, _ = h.askEach(h.every(OpClose), false) // a host that does not answer releases them as its agent ends
}

// every is op asked of every host not lost.
func (h *Hops) every(op string) map[string]Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	asks := map[string]Request{}
	for _, host := range h.hosts {
		if _, lost := h.lost[host]; !lost {
			asks[host] = Request{Op: op}
		}
	}
	return asks
}

// askEach asks and sorts the answers: a host whose answer is an error is
// lost (strict: the error is returned instead, naming each host).
func (h *Hops) askEach(asks map[string]Request, strict bool) (map[string]Reply, error) {
	if len(asks) == 0 {
		return nil, nil
	}
	t0 := time.Now()
	answers, err := h.t.Ask(asks)
	rtt := time.Since(t0)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for host, a := range answers {
		h.timeLocked(host, a.Clock, t0, rtt)
	}
	var errs []error
	for host := range asks {
		a, ok := answers[host]
		switch {
		case !ok:
			a.Error = "no answer"
		case a.Error == "":
			continue
		}
		if strict {
			errs = append(errs, fmt.Errorf("host %s: %s", host, a.Error))
		} else {
			h.loseLocked(host, a.Error)
		}
		delete(answers, host)
	}
	return answers, errors.Join(errs...)
}

// timeLocked notes a host's clock as read in an answer to an ask sent at
// t0 and answered after rtt: as NTP does, the host is taken to have read
// it in the middle of the round trip, give or take half of it; the
// shortest round trip so far is kept.
func (h *Hops) timeLocked(host string, clock int64, t0 time.Time, rtt time.Duration) {
	c := h.clock[host]
	c.Host, c.Readings, c.By = host, c.Readings+1, "this bench, from its asks for the host's hops"
	if clock != 0 && (c.Readings == 1 || rtt < 2*c.Error) {
		c.Offset, c.Error = time.Unix(0, clock).Sub(t0.Add(rtt/2)), rtt/2
	}
	h.clock[host] = c
}

// Clocks are the other hosts' clocks against this one's, in path order:
// as the coordinator measured them when the transport says, else as the
// asks did.
func (h *Hops) Clocks() []report.HostClock {
	var out []report.HostClock
	for _, host := range h.hosts {
		out = append(out, h.Clock(host))
	}
	return out
}

func (h *Hops) loseLocked(host, why string) {
	if _, ok := h.lost[host]; !ok {
		h.lost[host] = report.LostHost{Host: host, At: time.Now(), LastRead: h.when[host], Why: why}
	}
}
