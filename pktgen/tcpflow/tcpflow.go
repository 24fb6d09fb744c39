// Package tcpflow runs TCP flows through a lab: N connections from the
// sender's namespace to a sink in the receiver's, each writing as fast as
// its congestion control lets it for a duration, and reads TCP_INFO of
// both ends of every connection at each sampling interval and at the end.
//
// It is nslab's own sender and sink rather than iperf3 (which Debian
// has) because a report needs what iperf3 does not give: TCP_INFO of the
// receiving end as well as the sending one, on the same clock as the
// interface counters nslab samples, and every segment sent accounted for
// when the counters are read (the flows end cleanly: the sender stops
// writing, shuts its side down, and the sink reads to the end).
//
// The sockets are opened on a thread inside each namespace (ns.Do) and
// then used from any goroutine: a socket belongs to the namespace it was
// made in.
package tcpflow

import (
	"context"
	"errors"
	"fmt"
	"github.com/nslab/nslab/pktgen/measured"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// DefaultPort is the sink's TCP port when a job gives none.
const DefaultPort = spec.TCPPort

// drainLimit bounds how long the flows may take, after the duration, to
// deliver what they had sent (a slow link behind a deep buffer); past it
// they are reset and Result.Drained is false.
const drainLimit = 30 * time.Second

// Job is a set of TCP flows to run.
type Job struct {
	Sender, Receiver *ns.NS
	Dst              netip.Addr // the receiver's address
	Port             int        // the sink's port; 0: DefaultPort
	Flows            int        // connections; 0: 1
	CC               string     // congestion control (TCP_CONGESTION); "": the kernel's default
	Duration         time.Duration
	Interval         time.Duration // between TCP_INFO samples; 0: 1 s
	// OnSample, when set, is called after each sample with every flow's
	// points so far (the live lines of a bench), from Run's goroutine.
	OnSample func(flows []Flow)
	// BusyPoll, when above 0, is how long the sink's sockets busy-poll
	// the NAPI instance their packets come from (SO_BUSY_POLL with
	// SO_PREFER_BUSY_POLL, set on the listener to learn early that the
	// kernel refuses it, and on each connection, which does not inherit
	// it; Go's non-blocking reads poll once per read).
	BusyPoll time.Duration
	// Sink, when set, is the receiving end already listening (on another
	// host: the receiver's); nil: Run listens in Receiver and closes it.
	Sink Sink
}

// Sink is the receiving end of a job's flows: Listen's, here, or one on
// another host reached through its agent.
type Sink interface {
	// Wait waits until n flows were read to their end, at most limit.
	Wait(n int, limit time.Duration) bool
	// Flow is what the sink has of the flow from the sender's port.
	Flow(port int) (Peer, bool)
	// BusyPoll is SO_BUSY_POLL as the kernel gives it back (0: none).
	BusyPoll() time.Duration
	Close()
}

// Peer is the sink's end of one flow: what it read, when it read the
// last byte, and its TCP_INFO once the flow ended.
type Peer struct {
	Read uint64    `json:"read"`
	Last time.Time `json:"last"`
	Info Info      `json:"info"`
}

// Point is one sample of a flow's sending end, and Info what a report
// keeps of one end's TCP_INFO (package measured).
type (
	Point = measured.Point
	Info  = measured.Info
)

// Flow is one connection's run.
type Flow struct {
	Port     int     `json:"port"`     // the sender's port
	Received uint64  `json:"received"` // bytes the sink read
	Points   []Point `json:"points"`
	// Sender and Receiver are the two ends' TCP_INFO once the flow had
	// delivered everything (or was reset: see Result.Drained).
	Sender   Info `json:"sender"`
	Receiver Info `json:"receiver"`
	// Last is when the sink read the flow's last byte, since the start.
	Last time.Duration `json:"last"`
}

// Result is a run of flows.
type Result struct {
	CC       string        `json:"cc"`
	Duration time.Duration `json:"duration"` // the time the flows wrote
	// Elapsed is from the start until the last byte of any flow arrived.
	Elapsed time.Duration `json:"elapsed"`
	Drained bool          `json:"drained"` // every flow delivered all it wrote
	Flows   []Flow        `json:"flows"`
	// BusyPoll is the sink's connections' SO_BUSY_POLL as the kernel
	// gives it back (0: none).
	BusyPoll time.Duration `json:"receiver_busy_poll,omitempty"`
}

// Run runs job: the sink listens in the receiver's namespace, the flows
// connect from the sender's, write for the duration, shut down their
// sending side and wait (up to drainLimit) until the sink has read all.
func Run(ctx context.Context, j Job) (*Result, error) {
	if j.Flows <= 0 {
		j.Flows = 1
	}
	if j.Port == 0 {
		j.Port = DefaultPort
	}
	if j.Interval <= 0 {
		j.Interval = time.Second
	}
	s := j.Sink
	if s == nil {
		ls, err := Listen(j.Receiver, j.Dst, j.Port, j.BusyPoll)
		if err != nil {
			return nil, err
		}
		defer ls.Close()
		s = ls
	}
	conns, err := dial(j)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	return run(ctx, j, s, conns)
}

// run writes on conns for the job's duration, sampling them, then drains.
func run(ctx context.Context, j Job, s Sink, conns []*net.TCPConn) (*Result, error) {
	res := &Result{CC: congestionOf(conns[0]), Flows: make([]Flow, len(conns))}
	start := time.Now()
	stop := make(chan struct{})
	var writers sync.WaitGroup
	errs := make([]error, len(conns))
	for i, c := range conns {
		res.Flows[i].Port = c.LocalAddr().(*net.TCPAddr).Port
		writers.Add(1)
		go func() { defer writers.Done(); errs[i] = write(c, stop) }()
	}
	sampleUntil(ctx, j, conns, res, start)
	close(stop)
	writers.Wait()
	res.Duration = time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("TCP flows to %s: %w", j.Dst, err)
	}
	for _, c := range conns {
		_ = c.CloseWrite() // FIN after what was written: the sink reads to the end
	}
	res.Drained = s.Wait(len(conns), drainLimit)
	res.BusyPoll = s.BusyPoll()
	return res, finish(res, conns, s, start)
}

// congestionOf is the congestion control c uses, read back from its
// socket (TCP_CONGESTION): the job's, or the sender namespace's default
// (net.ipv4.tcp_congestion_control) when the job names none.
func congestionOf(c *net.TCPConn) string {
	rc, err := c.SyscallConn()
	if err != nil {
		return ""
	}
	var cc string
	_ = rc.Control(func(fd uintptr) { cc, _ = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION) }) // "" when it cannot be read
	return strings.TrimRight(cc, "\x00")
}

// sampleUntil samples every flow's sender at the job's interval until its
// duration is over or ctx is done.
func sampleUntil(ctx context.Context, j Job, conns []*net.TCPConn, res *Result, start time.Time) {
	tick := time.NewTicker(j.Interval)
	defer tick.Stop()
	end := time.NewTimer(j.Duration)
	defer end.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-end.C:
			return
		case <-tick.C:
			at := time.Since(start)
			for i, c := range conns {
				if ti, err := info(c); err == nil {
					res.Flows[i].Points = append(res.Flows[i].Points, Point{At: at, Acked: ti.Bytes_acked, Retrans: ti.Total_retrans,
						SRTT: time.Duration(ti.Rtt) * time.Microsecond, Cwnd: ti.Snd_cwnd})
				}
			}
			if j.OnSample != nil {
				j.OnSample(res.Flows)
			}
		}
	}
}

// finish reads both ends of every flow once they are done.
func finish(res *Result, conns []*net.TCPConn, s Sink, start time.Time) error {
	for i, c := range conns {
		ti, err := acked(c, time.Second)
		if err != nil {
			return fmt.Errorf("TCP_INFO of flow %d: %w", i+1, err)
		}
		res.Flows[i].Sender = infoOf(ti)
		peer, ok := s.Flow(res.Flows[i].Port)
		if !ok {
			return fmt.Errorf("flow %d (port %d): the sink never saw it", i+1, res.Flows[i].Port)
		}
		res.Flows[i].Received, res.Flows[i].Receiver, res.Flows[i].Last = peer.Read, peer.Info, peer.Last.Sub(start)
		res.Elapsed = max(res.Elapsed, res.Flows[i].Last)
	}
	return nil
}

// acked is c's TCP_INFO once everything it sent is acknowledged (the sink
// has read the FIN before the sender has the ACK of it), or after limit.
func acked(c *net.TCPConn, limit time.Duration) (*unix.TCPInfo, error) {
	deadline := time.Now().Add(limit)
	for {
		ti, err := info(c)
		if err != nil || ti.Unacked == 0 || time.Now().After(deadline) {
			return ti, err
		}
		time.Sleep(time.Millisecond)
	}
}

// write writes on c until stop is closed.
func write(c *net.TCPConn, stop <-chan struct{}) error {
	buf := make([]byte, 128<<10)
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)) // to look at stop again
		if _, err := c.Write(buf); err != nil && !errors.Is(err, syscall.EAGAIN) && !isTimeout(err) {
			return err
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dial opens the job's connections from a thread in the sender's
// namespace, each with the job's congestion control.
func dial(j Job) ([]*net.TCPConn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		if j.CC == "" {
			return nil
		}
		var serr error
		err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, j.CC) })
		if serr != nil {
			return fmt.Errorf("congestion control %s: %w (the kernel has those in net.ipv4.tcp_available_congestion_control)", j.CC, serr)
		}
		return err
	}}
	addr := net.JoinHostPort(j.Dst.String(), strconv.Itoa(j.Port))
	var conns []*net.TCPConn
	err := j.Sender.Do(func() error {
		for range j.Flows {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				return err
			}
			conns = append(conns, c.(*net.TCPConn))
		}
		return nil
	})
	if err != nil {
		closeAll(conns)
		return nil, fmt.Errorf("connect from %s to %s: %w", j.Sender.Name, addr, err)
	}
	return conns, nil
}

func closeAll(conns []*net.TCPConn) {
	for _, c := range conns {
		_ = c.SetLinger(0) // a flow not drained is reset, not left to linger
		_ = c.Close()
	}
}

// info reads c's TCP_INFO.
func info(c *net.TCPConn) (*unix.TCPInfo, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var ti *unix.TCPInfo
	var gerr error
	if err := rc.Control(func(fd uintptr) { ti, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		return nil, err
	}
	return ti, gerr
}

func infoOf(t *unix.TCPInfo) Info {
	us := func(v uint32) time.Duration { return time.Duration(v) * time.Microsecond }
	return Info{SegsOut: t.Segs_out, SegsIn: t.Segs_in, DataSegsOut: t.Data_segs_out, DataSegsIn: t.Data_segs_in,
		TotalRetrans: t.Total_retrans, BytesSent: t.Bytes_sent, BytesRetrans: t.Bytes_retrans, BytesAcked: t.Bytes_acked, BytesRecv: t.Bytes_received,
		SRTT: us(t.Rtt), RTTVar: us(t.Rttvar), MinRTT: us(t.Min_rtt), Cwnd: t.Snd_cwnd, MSS: t.Snd_mss, Reordering: t.Reordering,
		DSACKDups: t.Dsack_dups, RTOs: t.Total_rto, Busy: time.Duration(t.Busy_time) * time.Microsecond,
		RwndLimited: time.Duration(t.Rwnd_limited) * time.Microsecond, SndbufLimited: time.Duration(t.Sndbuf_limited) * time.Microsecond}
}

// LocalSink accepts the flows in the receiver's namespace and reads each
// to its end.
type LocalSink struct {
	ln    *net.TCPListener
	mu    sync.Mutex
	flows map[int]*peer // by the sender's port
	done  chan struct{} // a flow read to its end
	busy  time.Duration // each connection's SO_BUSY_POLL (0: none)
}

// peer is the sink's end of one flow.
type peer struct {
	conn  *net.TCPConn
	read  uint64
	last  time.Time
	info  Info
	ended bool // read to its end (or reset)
}

// Listen opens the sink on dst:port (0: DefaultPort), from a thread in
// namespace n; its sockets busy-poll for busyPoll when that is above 0.
func Listen(n *ns.NS, dst netip.Addr, port int, busyPoll time.Duration) (*LocalSink, error) {
	if port == 0 {
		port = DefaultPort
	}
	var ln net.Listener
	addr := net.JoinHostPort(dst.String(), strconv.Itoa(port))
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error { return setBusyPoll(rc, busyPoll) }}
	err := n.Do(func() error {
		var err error
		ln, err = lc.Listen(context.Background(), "tcp", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("TCP sink on %s in %s: %w", addr, n.Name, err)
	}
	s := &LocalSink{ln: ln.(*net.TCPListener), flows: map[int]*peer{}, done: make(chan struct{}, 1024), busy: busyPoll}
	go s.accept()
	return s, nil
}

func (s *LocalSink) accept() {
	for {
		c, err := s.ln.AcceptTCP()
		if err != nil {
			return // closed
		}
		if rc, err := c.SyscallConn(); err == nil {
			_ = setBusyPoll(rc, s.busy) // the listener took it: a connection does too
		}
		p := &peer{conn: c}
		s.mu.Lock()
		s.flows[c.RemoteAddr().(*net.TCPAddr).Port] = p
		s.mu.Unlock()
		go s.read(p)
	}
}

// read reads p to its end, then keeps its TCP_INFO.
func (s *LocalSink) read(p *peer) {
	buf := make([]byte, 256<<10)
	var n uint64
	var last time.Time
	for {
		k, err := p.conn.Read(buf)
		if k > 0 {
			n, last = n+uint64(k), time.Now()
		}
		if err != nil {
			break // io.EOF: the sender shut its side down; else reset
		}
	}
	ti, _ := info(p.conn)
	s.mu.Lock()
	p.read, p.last, p.ended = n, last, true
	if ti != nil {
		p.info = infoOf(ti)
	}
	s.mu.Unlock()
	s.done <- struct{}{}
}

// setBusyPoll makes socket rc busy-poll for d (nothing when d is 0).
func setBusyPoll(rc syscall.RawConn, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BUSY_POLL, int(d/time.Microsecond))
		if serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PREFER_BUSY_POLL, 1)
		}
	})
	if serr != nil {
		return fmt.Errorf("busy_poll %v on the sink: %w (the kernel needs CONFIG_NET_RX_BUSY_POLL)", d, serr)
	}
	return err
}

// BusyPoll reads SO_BUSY_POLL back from one of the sink's connections.
func (s *LocalSink) BusyPoll() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.flows {
		rc, err := p.conn.SyscallConn()
		if err != nil {
			return 0
		}
		var us int
		_ = rc.Control(func(fd uintptr) { us, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BUSY_POLL) })
		return time.Duration(us) * time.Microsecond
	}
	return 0
}

// Wait waits until n flows were read to their end, at most limit.
func (s *LocalSink) Wait(n int, limit time.Duration) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for range n {
		select {
		case <-s.done:
		case <-deadline.C:
			return false
		}
	}
	return true
}

// Flow is what the sink has of the flow from the sender's port (a flow
// not drained may still be read).
func (s *LocalSink) Flow(port int) (Peer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.flows[port]
	if !ok {
		return Peer{}, false
	}
	return Peer{Read: p.read, Last: p.last, Info: p.info}, true
}

// Flows is what the sink has of every flow it accepted, by the sender's
// port, and how many of them were read to their end.
func (s *LocalSink) Flows() (ended int, peers map[int]Peer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	peers = map[int]Peer{}
	for port, p := range s.flows {
		peers[port] = Peer{Read: p.read, Last: p.last, Info: p.info}
		if p.ended {
			ended++
		}
	}
	return ended, peers
}

func (s *LocalSink) Close() {
	_ = s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.flows {
		_ = p.conn.Close()
	}
}
