package remote

import (
	"strings"
	"testing"

	"github.com/nslab/nslab/pktgen/measured"
)

// script is a transport that answers from each host's counters, and a
// host that is gone answers with an error.
type script struct {
	rx   map[string]uint64
	gone map[string]bool
	asks []map[string]Request
}

func (s *script) Ask(asks map[string]Request) (map[string]Reply, error) {
	s.asks = append(s.asks, asks)
	out := map[string]Reply{}
	for h, r := range asks {
		switch {
		case s.gone[h]:
			out[h] = Reply{Error: "host " + h + ": read its hops: the agent ended"}
		case r.Op == OpRead:
			out[h] = Reply{Clock: 1, Counters: []measured.Counters{{RxPackets: s.rx[h]}}}
		default:
			out[h] = Reply{Clock: 1}
		}
	}
	return out, nil
}

// TestHopsLostHost: a host that stops answering is lost from then on,
// its hop keeps the counters of its last answer, it is asked nothing
// more, and the others go on; a host that does not answer Open fails it,
// named.
func TestHopsLostHost(t *testing.T) {
	s := &script{rx: map[string]uint64{"b": 10, "c": 20}, gone: map[string]bool{}}
	targets := []measured.Target{{Node: "router", Interface: "eth0", Host: "b"}, {Node: "server", Interface: "eth0", Host: "c"}}
	h, err := Open(s, targets, []string{"ingress", "receiver"}, []bool{false, false}, []string{"router"}, &Sink{Node: "server", Port: 9})
	if err != nil {
		t.Fatal(err)
	}
	if o := s.asks[0]; len(o["b"].Routers) != 1 || o["c"].Sink == nil || o["b"].Sink != nil {
		t.Errorf("open asked b %+v and c %+v: want the router on b, the sink on c", o["b"], o["c"])
	}
	if c, err := h.Read(); err != nil || c[0].RxPackets != 10 || c[1].RxPackets != 20 {
		t.Fatalf("read: %v %v", c, err)
	}
	s.gone["c"], s.rx["b"], s.rx["c"] = true, 15, 99
	c, err := h.Read()
	if err != nil || c[0].RxPackets != 15 || c[1].RxPackets != 20 {
		t.Errorf("read with c gone: %v %v; want b's new 15 and c's last 20", c, err)
	}
	if l := h.Lost(); len(l) != 1 || l[0].Host != "c" || l[0].LastRead.IsZero() || l[0].At.Before(l[0].LastRead) {
		t.Errorf("lost: %+v, want host c, its last reading before it was lost", l)
	}
	h.Read()
	if last := s.asks[len(s.asks)-1]; len(last) != 1 || last["b"].Op != OpRead {
		t.Errorf("asked %v after c was lost, want b only", last)
	}
	if cl := h.Clock("b"); cl.Host != "b" || cl.Readings == 0 || cl.By == "" {
		t.Errorf("clock of b: %+v", cl)
	}
	s.gone["b"] = true
	if _, err := Open(s, targets, []string{"ingress", "receiver"}, make([]bool, 2), nil, nil); err == nil || !strings.Contains(err.Error(), "host b:") {
		t.Errorf("open with b gone: %v, want an error naming host b", err)
	}
}
