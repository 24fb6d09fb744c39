package remote

import (
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/nslab/nslab/pktgen/tcpflow"
	"github.com/nslab/nslab/topology/lab/deployed"
)

// Ops of a TCP run (tcp:) whose receiver is on the host asked: its sink
// is opened there, polled for what it read of each flow, and closed; and
// one more UDP port held open at the receiver, for the run's latency
// probe.
const (
	OpTCPListen = "tcp-listen"
	OpTCPFlows  = "tcp-flows"
	OpTCPClose  = "tcp-close"
	OpUDPSink   = "udp-sink" // Request.Sink; a port held already is held still
)

// TCPAsk opens a TCP run's sink: tcpflow.Listen in node's namespace.
type TCPAsk struct {
	Node     string        `json:"node"`
	Dst      netip.Addr    `json:"dst"`
	Port     int           `json:"port"`
	BusyPoll time.Duration `json:"busy_poll_ns,omitempty"`
}

// TCPFlows is what the sink read of each flow (by the sender's port, its
// times the host's clock), how many it read to their end, and its
// connections' SO_BUSY_POLL.
type TCPFlows struct {
	Ended    int                  `json:"ended"`
	Peers    map[int]tcpflow.Peer `json:"peers"`
	BusyPoll time.Duration        `json:"busy_poll_ns,omitempty"`
}

// sinks are the receiving ends a server holds for the bench.
type sinks struct {
	tcp *tcpflow.LocalSink
	udp map[int]io.Closer
}

// answer answers a sink op on the lab r opened on this host.
func (k *sinks) answer(r *deployed.Opened, req Request) (Reply, error) {
	var rep Reply
	switch req.Op {
	case OpTCPListen:
		a := req.TCP
		if a == nil || !r.Lab.Local(a.Node) || r.Node(a.Node) == nil {
			return rep, fmt.Errorf("tcp-listen: no node of this host named")
		}
		k.closeTCP()
		var err error
		k.tcp, err = tcpflow.Listen(r.Node(a.Node).NS, a.Dst, a.Port, a.BusyPoll)
		return rep, err
	case OpTCPFlows:
		if k.tcp == nil {
			return rep, fmt.Errorf("tcp-flows before tcp-listen")
		}
		f := &TCPFlows{BusyPoll: k.tcp.BusyPoll()}
		f.Ended, f.Peers = k.tcp.Flows()
		rep.TCP = f
	case OpTCPClose:
		k.closeTCP()
	case OpUDPSink:
		s := req.Sink
		if s == nil || !r.Lab.Local(s.Node) || r.Node(s.Node) == nil {
			return rep, fmt.Errorf("udp-sink: no node of this host named")
		}
		if k.udp[s.Port] != nil {
			return rep, nil
		}
		c, err := OpenSink(r.Node(s.Node).NS, s.Port, s.IPv6)
		if err != nil {
			return rep, err
		}
		if k.udp == nil {
			k.udp = map[int]io.Closer{}
		}
		k.udp[s.Port] = c
	}
	return rep, nil
}

func (k *sinks) closeTCP() {
	if k.tcp != nil {
		k.tcp.Close()
		k.tcp = nil
	}
}

func (k *sinks) close() {
	k.closeTCP()
	for _, c := range k.udp {
		_ = c.Close() // only held open
	}
}

// TCPSink is a TCP run's sink on another host (tcpflow.Sink), polled
// through the transport; its times are taken less offset, the host's
// clock against this one's.
type TCPSink struct {
	h      *Hops
	host   string
	offset time.Duration
	last   TCPFlows
}

// ListenTCP opens a TCP run's sink on host.
func (h *Hops) ListenTCP(host string, a TCPAsk, offset time.Duration) (*TCPSink, error) {
	if _, err := h.askEach(map[string]Request{host: {Op: OpTCPListen, TCP: &a}}, true); err != nil {
		return nil, err
	}
	return &TCPSink{h: h, host: host, offset: offset}, nil
}

// HoldUDP holds UDP port open at the receiver on host (nothing answers
// the packets sent there).
func (h *Hops) HoldUDP(host string, s Sink) error {
	_, err := h.askEach(map[string]Request{host: {Op: OpUDPSink, Sink: &s}}, true)
	return err
}

// Wait polls the sink until n flows were read to their end, at most limit.
func (s *TCPSink) Wait(n int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		answers, err := s.h.askEach(map[string]Request{s.host: {Op: OpTCPFlows}}, true)
		if err == nil && answers[s.host].TCP != nil {
			s.last = *answers[s.host].TCP
		}
		if s.last.Ended >= n {
			return true
		}
		if err != nil || time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Flow is what the sink read of the flow from port, as last polled.
func (s *TCPSink) Flow(port int) (tcpflow.Peer, bool) {
	p, ok := s.last.Peers[port]
	if ok && !p.Last.IsZero() {
		p.Last = p.Last.Add(-s.offset)
	}
	return p, ok
}

func (s *TCPSink) BusyPoll() time.Duration { return s.last.BusyPoll }

// Close closes the sink on its host.
func (s *TCPSink) Close() {
	_, _ = s.h.askEach(map[string]Request{s.host: {Op: OpTCPClose}}, false) // a lost host closes it as its agent ends
}
