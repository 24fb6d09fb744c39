package sample

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// TestPrivilegedReadQuietAgrees: while ns1 sends control frames (an
// experimental ethertype, which the taps keep) at random moments, 30
// quiet readings of veth1's tx and veth2's rx each agree exactly with
// what the taps on them counted since the first. The premise, that frames
// came during readings (which is when a plain reading goes wrong), is
// checked: some readings were read again. With gaps drawn from an
// exponential of mean 45 ms, a try (Settle, 20 ms, and two reads: 20 to 30
// ms) is crossed by a frame with probability p of 0.36 to 0.49, so no
// reading tried again in 30 has probability (1-p)^30, 1.5e-6 at most,
// and the 20 tries of one of the 31 readings all crossed (ReadQuiet then
// takes the last), 31 p^20, 3e-6 at most.
func TestPrivilegedReadQuietAgrees(t *testing.T) {
	l, r, sent, received := tappedPair(t)
	a, err := r.Link(spec.Endpoint{Node: "ns1", Interface: "veth1"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(r.Opened, []Target{{Node: "ns1", Namespace: l.Namespace("ns1"), Interface: "veth1"}, {Node: "ns2", Namespace: l.Namespace("ns2"), Interface: "veth2"}})
	if err != nil {
		t.Fatal(err)
	}

	var fd int
	if err := r.Node("ns1").NS.Do(func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	frame := make([]byte, 60)
	copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(frame[6:], a.Attrs().HardwareAddr)
	frame[12], frame[13] = 0x88, 0xb5
	to := &unix.SockaddrLinklayer{Ifindex: a.Attrs().Index, Halen: 6, Addr: [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	var stop atomic.Bool
	done := make(chan error, 1)
	go func() {
		for !stop.Load() {
			time.Sleep(time.Duration(rand.ExpFloat64() * float64(45*time.Millisecond)))
			if err := unix.Sendto(fd, frame, 0, to); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	defer func() {
		stop.Store(true)
		if err := <-done; err != nil {
			t.Errorf("send: %v", err)
		}
	}()

	taps := []*Neighbours{sent, received}
	reads := 0
	var base Sample
	if err := ReadQuiet(taps, nil, func() ([]Counters, error) { reads++; var err error; base, err = s.Read(); return base.Counters, err }); err != nil {
		t.Fatal(err)
	}
	totals := make([]uint64, 2)
	const readings = 30
	for i := range readings {
		var now Sample
		if err := ReadQuiet(taps, totals, func() ([]Counters, error) { reads++; var err error; now, err = s.Read(); return now.Counters, err }); err != nil {
			t.Fatal(err)
		}
		tx, rx := now.Counters[0].Sub(base.Counters[0]).TxPackets, now.Counters[1].Sub(base.Counters[1]).RxPackets
		if tx != totals[0] || rx != totals[1] {
			t.Fatalf("reading %d: veth1 sent %d, its tap counted %d; veth2 received %d, its tap counted %d", i, tx, totals[0], rx, totals[1])
		}
	}
	if reads == 2*(readings+1) {
		t.Fatalf("no frame came during any of %d readings: the test did not test the race", readings)
	}
	t.Logf("%d readings agreed, %d frames; %d tries (those crossed by a frame were tried again)", readings, totals[0], reads/2)
}
