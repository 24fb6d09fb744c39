package watch

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/tcpflow"
)

// TestTCPConns: a connection's rates are its counters' growth over the
// interval; one whose counters went back is another connection on the
// same ends, counted from its start; an idle one is left out.
func TestTCPConns(t *testing.T) {
	ap := func(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
	a := []kstat.TCPSocket{
		{Local: ap("10.0.0.1:1000"), Remote: ap("10.0.0.2:80"), BytesAcked: 1e6, Retrans: 3},
		{Local: ap("10.0.0.1:1001"), Remote: ap("10.0.0.2:80"), BytesAcked: 5e6},
		{Local: ap("10.0.0.1:1002"), Remote: ap("10.0.0.2:80"), BytesAcked: 7},
	}
	b := []kstat.TCPSocket{
		{Local: ap("10.0.0.1:1000"), Remote: ap("10.0.0.2:80"), BytesAcked: 3e6, Retrans: 5, Cwnd: 40, SRTT: 1500 * time.Microsecond},
		{Local: ap("10.0.0.1:1001"), Remote: ap("10.0.0.2:80"), BytesAcked: 1e6}, // reused ends
		{Local: ap("10.0.0.1:1002"), Remote: ap("10.0.0.2:80"), BytesAcked: 7},   // idle
	}
	got := tcpConns("c", a, b, 2)
	if len(got) != 2 || got[0].SendMbps != 8 || got[0].Retrans != 2 || got[0].Cwnd != 40 || got[0].SRTTms != 1.5 || got[1].SendMbps != 4 {
		t.Fatalf("%+v", got)
	}
}

// TestPrivilegedWatchTCP: a TCP flow between two nodes of a watched lab
// shows at both ends, its sending rate within the bytes the flow itself
// delivered, and in the table.
func TestPrivilegedWatchTCP(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	_, l, w := watchedCRS(t)
	dst := l.Node("ns3").Interfaces[0].Addresses[0].Addr()
	done := make(chan *tcpflow.Result, 1)
	go func() {
		res, err := tcpflow.Run(context.Background(), tcpflow.Job{Sender: w.run.Node("ns1").NS, Receiver: w.run.Node("ns3").NS, Dst: dst, Port: 5399, Duration: 2 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	time.Sleep(500 * time.Millisecond)
	a, err := w.Read()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	b, err := w.Read()
	if err != nil {
		t.Fatal(err)
	}
	res := <-done
	v := w.Delta(a, b)
	if v.NoTCP != "" {
		t.Skipf("%s (the rest of the view is tested without it)", v.NoTCP)
	}
	var send, recv *TCPConn
	for i, c := range v.TCP {
		switch {
		case c.Node == "ns1" && strings.HasSuffix(c.Remote, ":5399"):
			send = &v.TCP[i]
		case c.Node == "ns3" && strings.HasSuffix(c.Local, ":5399"):
			recv = &v.TCP[i]
		}
	}
	if res == nil || len(res.Flows) != 1 || send == nil || recv == nil {
		t.Fatalf("connections %+v (flow %+v)", v.TCP, res)
	}
	delivered := float64(res.Flows[0].Received) * 8 / 1e6 // Mbit in all, over about 2 s
	if send.SendMbps <= 0 || send.SendMbps > delivered || recv.RecvMbps <= 0 || recv.RecvMbps > delivered || send.Cwnd == 0 || send.State != "established" {
		t.Errorf("sender %+v receiver %+v; the flow delivered %.1f Mbit", send, recv, delivered)
	}
	var out bytes.Buffer
	v.WriteTable(&out)
	if !strings.Contains(out.String(), "TCP LOCAL") || !strings.Contains(out.String(), send.Local) {
		t.Errorf("table:\n%s", out.String())
	}
}
