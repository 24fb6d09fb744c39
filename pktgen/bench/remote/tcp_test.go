package remote

import (
	"testing"
	"time"

	"github.com/nslab/nslab/pktgen/measured"
	"github.com/nslab/nslab/pktgen/tcpflow"
)

// sinkHost is host c holding a TCP sink whose flows end one per poll.
type sinkHost struct {
	polls int
	last  time.Time
}

func (s *sinkHost) Ask(asks map[string]Request) (map[string]Reply, error) {
	out := map[string]Reply{}
	for h, r := range asks {
		rep := Reply{Clock: 1}
		if r.Op == OpTCPFlows {
			s.polls++
			rep.TCP = &TCPFlows{Ended: s.polls, Peers: map[int]tcpflow.Peer{40000: {Read: 1000, Last: s.last}}}
		}
		out[h] = rep
	}
	return out, nil
}

// TestTCPSinkWaitsAndCorrects: Wait polls the sink on its host until the
// flows ended, and a flow's last byte is taken at the host's time less
// its clock's offset against this one's.
func TestTCPSinkWaitsAndCorrects(t *testing.T) {
	at := time.Unix(1000, 0)
	host := &sinkHost{last: at}
	h, err := Open(host, []measured.Target{{Node: "server", Interface: "eth0", Host: "c"}}, []string{"receiver"}, []bool{false}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.ListenTCP("c", TCPAsk{Node: "server", Port: 5301}, 3*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Wait(3, time.Minute) || host.polls != 3 {
		t.Errorf("waited for 3 flows over %d polls", host.polls)
	}
	p, ok := s.Flow(40000)
	if !ok || p.Read != 1000 || !p.Last.Equal(at.Add(-3*time.Millisecond)) {
		t.Errorf("flow from port 40000: %+v %v, want 1000 bytes, last at %v", p, ok, at.Add(-3*time.Millisecond))
	}
	if _, ok := s.Flow(40001); ok {
		t.Error("a flow the sink never saw")
	}
}
