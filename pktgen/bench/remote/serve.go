package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nslab/nslab/pktgen/receive"
	"io"
	"net"
	"slices"
	"time"

	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// Side is what a host does to its share of the lab for a bench run on
// another host, besides reading the path's hops: the events placed on its
// nodes, and the counters of its interfaces off the path.
type Side interface {
	Event(text string) error // text as bench --event takes it
	OpenOffPath(ipv6 bool) error
	OffPath() (map[string]Counted, error)
	Close()
}

// Serve answers one bench's asks for this host's hops, one JSON Request
// per line on in and one Reply per line on out, until in ends or an
// OpClose; side does its events and reads its interfaces off the path.
// It runs in the host's own namespaces (the lab's, r, opened there); what
// it opens for the hops it closes before it returns.
func Serve(r *deployed.Opened, side Side, in io.Reader, out io.Writer) error {
	dec, enc := json.NewDecoder(in), json.NewEncoder(out)
	s := &server{r: r, side: side}
	defer s.close()
	for {
		var req Request
		if err := dec.Decode(&req); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read an ask: %w", err)
		}
		if req.Op == OpClose {
			return enc.Encode(Reply{Clock: time.Now().UnixNano()})
		}
		rep, err := s.answer(req)
		rep.Clock = time.Now().UnixNano()
		if err != nil {
			rep.Error = err.Error()
		}
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("answer: %w", err)
		}
	}
}

// server is one bench's asks served: the hops it opened, and the side.
type server struct {
	r     *deployed.Opened
	side  Side
	h     *served
	sinks sinks
}

// answer answers one ask but OpClose.
func (s *server) answer(req Request) (Reply, error) {
	switch req.Op {
	case OpTCPListen, OpTCPFlows, OpTCPClose, OpUDPSink:
		return s.sinks.answer(s.r, req)
	}
	var rep Reply
	var err error
	switch {
	case req.Op == OpEvent:
		err = s.side.Event(req.Event)
	case req.Op == OpOffOpen:
		err = s.side.OpenOffPath(req.IPv6)
	case req.Op == OpOffRead:
		rep.Off, err = s.side.OffPath()
	case req.Op == OpRoutes:
		rep.Routes, err = kernelRoutes(s.r)
	case req.Op == OpOpen && s.h == nil:
		s.h, err = open(s.r, req)
	case s.h == nil:
		err = fmt.Errorf("%s before open", req.Op)
	case req.Op == OpRead:
		rep.Counters, err = s.h.read()
	case req.Op == OpControl:
		err = s.h.control(&rep)
	case req.Op == OpLatencyOpen && req.Reader != nil && s.h.reader == nil:
		s.h.reader, err = openReader(s.r, req.Reader)
	case req.Op == OpLatencyStop && req.Arrivals != nil && s.h.reader != nil:
		rep.Arrivals, err = stopReader(s.h.reader, req.Arrivals)
		s.h.reader = nil
	default:
		err = fmt.Errorf("unknown ask %q", req.Op)
	}
	return rep, err
}

// kernelRoutes reads this host's nodes' kernels (deployed.Opened.Learn)
// and returns each node's routes, by node.
func kernelRoutes(r *deployed.Opened) (map[string][]spec.Route, error) {
	if err := r.Learn(); err != nil {
		return nil, err
	}
	out := map[string][]spec.Route{}
	for _, n := range r.Lab.Model().Nodes {
		if !n.KernelRead {
			continue
		}
		out[n.Name] = []spec.Route{}
		for _, rt := range n.Learned {
			out[n.Name] = append(out[n.Name], *rt)
		}
	}
	return out, nil
}

// close releases what the bench opened here.
func (s *server) close() {
	if s.h != nil {
		s.h.close()
	}
	s.sinks.close()
	s.side.Close()
}

// served is what one bench opened on this host.
type served struct {
	r          *deployed.Opened
	sampler    *sample.Sampler
	neighbours []*sample.Neighbours // nil where the hop does not receive
	received   []uint64             // counted so far, by hop
	sent       []*sample.Neighbours // the control frames a hop sends, when its next hop is on another host
	sentSoFar  []uint64             // counted so far, by hop
	routers    []string
	sink       io.Closer
	reader     *receive.Reader // the receiver's, during a run with latency
}

// open opens the counters of the hops asked, and the sink.
func open(r *deployed.Opened, req Request) (*served, error) {
	n := len(req.Hops)
	h := &served{r: r, routers: req.Routers, neighbours: make([]*sample.Neighbours, n), received: make([]uint64, n), sent: make([]*sample.Neighbours, n), sentSoFar: make([]uint64, n)}
	var targets []sample.Target
	for _, x := range req.Hops {
		if !r.Lab.Local(x.Node) {
			return nil, fmt.Errorf("node %s is not on this host", x.Node)
		}
		targets = append(targets, sample.TargetOf(r, spec.Endpoint{Node: x.Node, Interface: x.Interface}))
	}
	var err error
	if h.sampler, err = sample.New(r, targets); err != nil {
		return nil, err
	}
	for i, x := range req.Hops {
		in := x.Role == "ingress" || x.Role == "receiver" || x.Role == "switch in"
		if !in && !x.SendsAcross {
			continue
		}
		n := r.Node(x.Node)
		l, err := nlsafe.LinkByName(n.Handle, x.Interface)
		if err == nil && in {
			h.neighbours[i], err = sample.CountNeighbours(n.NS, l.Attrs().Index, req.IPv6)
		}
		if err == nil && x.SendsAcross {
			h.sent[i], err = sample.CountSentControl(n.NS, l.Attrs().Index, req.IPv6)
		}
		if err != nil {
			h.close()
			return nil, fmt.Errorf("%s:%s: %w", x.Node, x.Interface, err)
		}
	}
	if s := req.Sink; s != nil && r.Node(s.Node) != nil {
		if h.sink, err = OpenSink(r.Node(s.Node).NS, s.Port, s.IPv6); err != nil {
			h.close()
			return nil, err
		}
	}
	return h, nil
}

// read reads every hop's counters.
func (h *served) read() ([]sample.Counters, error) {
	s, err := h.sampler.Read()
	return s.Counters, err
}

// control puts into rep the hops' counters with the neighbour frames each
// received since open, read at a quiet moment (sample.ReadQuiet: at a moment no
// control frame passed the taps, so both end at the same frame), the
// routers' counters, and this host's CPUs.
func (h *served) control(rep *Reply) error {
	var counters []sample.Counters
	n := len(h.received)
	totals := append(slices.Clone(h.received), h.sentSoFar...)
	if err := sample.ReadQuiet(append(slices.Clone(h.neighbours), h.sent...), totals, func() (c []sample.Counters, err error) { counters, err = h.read(); return counters, err }); err != nil {
		return err
	}
	copy(h.received, totals[:n])
	copy(h.sentSoFar, totals[n:])
	rep.Counters, rep.Received, rep.Sent, rep.MIB, rep.CT = counters, h.received, h.sentSoFar, map[string]map[string]uint64{}, map[string]map[string]uint64{}
	for _, node := range h.routers {
		m, c, err := kstat.RouterCounters(h.r.Node(node).NS)
		if err != nil {
			return err
		}
		rep.MIB[node] = m
		if c != nil {
			rep.CT[node] = c
		}
	}
	rep.Machine = &Machine{CPU: kstat.CPUTimes(), Softnet: kstat.Softnet()}
	return nil
}

func (h *served) close() {
	if h.reader != nil {
		_, _ = h.reader.Stop(context.Background(), 0) // nobody asks what it read any more
	}
	for _, c := range append(h.neighbours, h.sent...) {
		if c != nil {
			c.Close()
		}
	}
	if h.sink != nil {
		_ = h.sink.Close() // only held open
	}
}

// OpenSink binds UDP port in namespace n (the run's receiver) and never
// reads it: the receiver then answers nothing (no ICMP port unreachable,
// which would also make it re-probe ARP later, one more packet at its
// interface). The socket is opened on a thread inside n.
func OpenSink(n *ns.NS, port int, ipv6 bool) (io.Closer, error) {
	network := map[bool]string{false: "udp4", true: "udp6"}[ipv6]
	var c net.PacketConn
	err := n.Do(func() error {
		var err error
		c, err = net.ListenPacket(network, fmt.Sprintf(":%d", port))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("receiver sink on UDP port %d in %s: %w", port, n.Name, err)
	}
	return c, nil
}
