package softirq

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// netRXRuns is /proc/softirqs' NET_RX count of cpu: the kernel counts
// each run of a softirq there just before the softirq_entry tracepoint.
func netRXRuns(t *testing.T, cpu int) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/softirqs")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > cpu+1 && f[0] == "NET_RX:" {
			n, err := strconv.ParseUint(f[cpu+1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no NET_RX line in /proc/softirqs")
	return 0
}

// pingPong sends packets UDP datagrams over the loopback of namespace n
// from a thread pinned to cpu0, each read back before the next; mark is
// called (in n, on that thread) just before the first and after the last.
func pingPong(t *testing.T, n *ns.NS, packets int, mark func(after bool) error) {
	t.Helper()
	err := n.Do(func() error {
		var set unix.CPUSet
		set.Set(0)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return err
		}
		rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return err
		}
		defer rx.Close()
		tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
		if err != nil {
			return err
		}
		defer tx.Close()
		buf := make([]byte, 64)
		if err := mark(false); err != nil {
			return err
		}
		for range packets {
			if _, err := tx.Write(buf); err != nil {
				return err
			}
			if _, err := rx.Read(buf); err != nil {
				return err
			}
		}
		return mark(true)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPrivilegedSoftirqTime: UDP over the loopback of a throwaway
// namespace, sent from a thread pinned to cpu0, raises NET_RX there. The
// counter's NET_RX runs on cpu0 agree with /proc/softirqs' (which the
// kernel counts at the same place), and its time is more than nothing
// and less than the wall time.
func TestPrivilegedSoftirqTime(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	n := labtest.OpenNamespace(t, labtest.NetnsDir(t))
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	const packets = 20000
	var before, after Reading
	var runsBefore, runsAfter uint64
	var start time.Time
	var wall time.Duration
	pingPong(t, n, packets, func(done bool) (err error) {
		if !done {
			runsBefore, start = netRXRuns(t, 0), time.Now()
			before, err = c.Read()
			return err
		}
		wall = time.Since(start)
		after, err = c.Read()
		runsAfter = netRXRuns(t, 0)
		return err
	})
	ns, runs, err := after.Since(before, []int{0}, NetRX)
	if err != nil {
		t.Fatal(err)
	}
	proc := runsAfter - runsBefore
	t.Logf("%d packets in %v: NET_RX on cpu0 %d runs (/proc/softirqs %d), %d ns, %.0f ns a packet", packets, wall, runs, proc, ns, float64(ns)/packets)
	if runs < packets/2 || runs > proc+10 || proc > runs+10+proc/100 {
		t.Errorf("NET_RX runs %d, /proc/softirqs %d (%d packets): they must agree", runs, proc, packets)
	}
	if ns == 0 || time.Duration(ns) > wall {
		t.Errorf("NET_RX time %d ns over a wall time of %v", ns, wall)
	}
	if _, _, err := after.Since(before, []int{len(after.Ns)}, NetRX); err == nil {
		t.Error("a CPU past the last was read without an error")
	}
}

// TestPrivilegedDeviceTime: the same loopback traffic, watched per
// device: the namespace's lo is charged one packet per datagram, and its
// time is more than nothing and at most the CPU's NET_RX time (the
// softirq's own overhead before its first packet is nobody's).
func TestPrivilegedDeviceTime(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	n := labtest.OpenNamespace(t, labtest.NetnsDir(t))
	inode, err := n.Inode()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	d, err := OpenDevices()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	lo := Dev{NetNS: uint32(inode), Ifindex: 1}
	if err := d.Watch(lo); err != nil {
		t.Fatal(err)
	}
	const packets = 20000
	var before, after Reading
	pingPong(t, n, packets, func(done bool) (err error) {
		if !done {
			before, err = c.Read()
		} else {
			after, err = c.Read()
		}
		return err
	})
	got, err := d.Read(lo)
	if err != nil {
		t.Fatal(err)
	}
	rxNs, _, err := after.Since(before, []int{0}, NetRX)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lo of the test's namespace: %d packets, %d ns (%.0f ns a packet); NET_RX on cpu0 %d ns", got.Packets, got.Ns, float64(got.Ns)/float64(max(got.Packets, 1)), rxNs)
	if got.Packets != packets {
		t.Errorf("lo charged %d packets, %d sent", got.Packets, packets)
	}
	if got.Ns == 0 || got.Ns > rxNs+rxNs/20 {
		t.Errorf("lo charged %d ns; NET_RX time %d ns", got.Ns, rxNs)
	}
	if _, err := d.Read(Dev{NetNS: 1, Ifindex: 12345}); err == nil {
		t.Error("a device never watched was read without an error")
	}
}
