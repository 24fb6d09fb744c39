// Package remote reads the hops of a bench's path that run on other hosts
// of a lab that spans hosts: the bench, on its sender's host, asks each
// other host's agent (through the coordinator that reached them all) for
// the counters of that host's hops, and each host answers with its own
// sampler, neighbour frame counters and routers' IP counters. The clock of
// each reading is the answering host's own, in Unix nanoseconds; the
// coordinator states the offsets between the hosts' clocks.
package remote

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nslab/nslab/pktgen/measured"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/spec"
)

// Hop is one interface of the path on the host asked, and its role there
// (sender, ingress, egress, receiver, switch in, switch out).
type Hop struct {
	Node      string `json:"node"`
	Interface string `json:"interface"`
	Role      string `json:"role"`
	// SendsAcross: the next hop of the path is on another host, so this
	// one counts the control frames it sends (its peer's count is read
	// there, at another moment).
	SendsAcross bool `json:"sends_across,omitempty"`
}

// Sink is the run's receiver, when it is on the host asked: its UDP
// destination port is held open there for the run (nothing answers the
// packets, as on the sender's host).
type Sink struct {
	Node string `json:"node"`
	Port int    `json:"port"`
	IPv6 bool   `json:"ipv6,omitempty"`
}

// Ops a host's hops answer.
const (
	OpOpen    = "open"    // open the counters of these hops
	OpRead    = "read"    // the hops' interface counters now
	OpControl = "control" // the hops' counters read with the neighbour frames each received since open (at a quiet moment), the routers' IP counters and the host's CPUs
	OpClose   = "close"   // release everything
	// A run with events (bench --event) on a lab whose nodes are on
	// several hosts: an event placed on a node of the host asked, and the
	// counters of every lab interface of the host off the path, for the
	// traffic that goes round it.
	OpEvent = "event"
	// OpRoutes: the routes this host's nodes' kernels hold (a daemon's
	// learned ones among them), by node: a run's path over hosts follows
	// the routes the other hosts' routers learned, as over one host.
	OpRoutes  = "routes"
	OpOffOpen = "off-path open" // from now on
	OpOffRead = "off-path"      // each interface's counts since
)

// Counted is what one interface counted since OpOffOpen: packets
// received and sent, and the control frames it received (what is not a
// run's: ARP, the routing daemons' hellos and updates; see
// sample.CountNeighbours).
type Counted struct {
	Rx      uint64 `json:"rx"`
	Tx      uint64 `json:"tx"`
	Control uint64 `json:"control"`
}

// Machine is a host's CPU times and softnet_stat counters, machine-wide,
// by CPU, as package kstat reads them: what its routers' receive work
// cost it.
type Machine struct {
	CPU     map[int][]uint64 `json:"cpu"`
	Softnet map[int][]uint64 `json:"softnet"`
}

// Request is one ask to one host's hops.
type Request struct {
	Op       string       `json:"op"`
	Hops     []Hop        `json:"hops,omitempty"`     // OpOpen
	Routers  []string     `json:"routers,omitempty"`  // OpOpen: routers here whose IP counters the run reads
	Sink     *Sink        `json:"sink,omitempty"`     // OpOpen
	IPv6     bool         `json:"ipv6,omitempty"`     // OpOpen: the run's family, for the neighbour frames
	Reader   *ReaderAsk   `json:"reader,omitempty"`   // OpLatencyOpen
	Arrivals *ArrivalsAsk `json:"arrivals,omitempty"` // OpLatencyStop
	Event    string       `json:"event,omitempty"`    // OpEvent: as bench --event takes it
	TCP      *TCPAsk      `json:"tcp,omitempty"`      // OpTCPListen
}

// Reply is one host's answer.
type Reply struct {
	Error    string                       `json:"error,omitempty"`
	Clock    int64                        `json:"clock_unix_ns"`
	Counters []measured.Counters          `json:"counters,omitempty"` // OpRead, and OpControl's read with Received: in the order of the hops opened
	Received []uint64                     `json:"received,omitempty"` // OpControl: neighbour frames since open, by hop
	Sent     []uint64                     `json:"sent,omitempty"`     // OpControl: control frames sent since open, by hop (those SendsAcross)
	MIB      map[string]map[string]uint64 `json:"mib,omitempty"`
	CT       map[string]map[string]uint64 `json:"ct,omitempty"`
	Machine  *Machine                     `json:"machine,omitempty"`  // OpControl
	Arrivals *Arrivals                    `json:"arrivals,omitempty"` // OpLatencyStop
	Off      map[string]Counted           `json:"off,omitempty"`      // OpOffRead: by NODE:IF
	TCP      *TCPFlows                    `json:"tcp,omitempty"`      // OpTCPFlows
	Routes   map[string][]spec.Route      `json:"routes,omitempty"`   // OpRoutes: by node
}

// Transport carries one ask to each of several hosts and brings back each
// host's answer (an agent relays them through the coordinator). A host
// that could not be asked has its answer's Error set; the error returned
// is for the transport itself.
type Transport interface {
	Ask(asks map[string]Request) (map[string]Reply, error)
}

// Pipe is the transport of a bench an agent runs: one JSON line per ask
// written to W, one per answer read from R (pipes to the agent, which
// relays them). Asks from several goroutines (the sampler's, the
// bench's) take turns.
type Pipe struct {
	mu     sync.Mutex
	clocks map[string]report.HostClock
	enc    *json.Encoder
	dec    *json.Decoder
}

// Clocks are each host's clock against this one's as the coordinator
// measured them, with the last answer.
func (p *Pipe) Clocks() map[string]report.HostClock {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clocks
}

// NewPipe is a transport over w and r.
func NewPipe(w io.Writer, r io.Reader) *Pipe {
	return &Pipe{enc: json.NewEncoder(w), dec: json.NewDecoder(r)}
}

// Ask sends asks and reads their answers.
func (p *Pipe) Ask(asks map[string]Request) (map[string]Reply, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.enc.Encode(asks); err != nil {
		return nil, fmt.Errorf("ask other hosts for their hops: %w", err)
	}
	var a struct {
		Answers map[string]Reply `json:"answers"`
		Clocks  map[string]struct {
			Offset time.Duration `json:"offset_ns"`
			Error  time.Duration `json:"error_ns"`
		} `json:"clocks"`
		Error string `json:"error,omitempty"`
	}
	if err := p.dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("read other hosts' hops: %w", err)
	}
	if a.Clocks != nil {
		p.clocks = map[string]report.HostClock{}
		for h, c := range a.Clocks {
			p.clocks[h] = report.HostClock{Host: h, Offset: c.Offset, Error: c.Error, By: "the coordinator, at its hellos to the agents"}
		}
	}
	if a.Error != "" {
		return nil, fmt.Errorf("other hosts' hops: %s", a.Error)
	}
	return a.Answers, nil
}
