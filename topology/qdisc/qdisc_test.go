package qdisc

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func TestShellLines(t *testing.T) {
	for _, c := range []struct {
		m    spec.Impair
		want string
	}{
		{spec.Impair{Rate: 20e6}, "tc -n n1 qdisc replace dev e0 root handle 1: tbf rate 20Mbit burst 25000 limit 1514000"},
		{spec.Impair{Rate: 64e3, Limit: 10}, "tc -n n1 qdisc replace dev e0 root handle 1: tbf rate 64kbit burst 1514 limit 15140"},
		{spec.Impair{Delay: 20 * time.Millisecond, Jitter: 1500 * time.Microsecond, Loss: 1, Duplicate: 0.1, Reorder: 2, Corrupt: 0.5, Rate: 10e6},
			"tc -n n1 qdisc replace dev e0 root handle 1: netem delay 20ms 1500us loss 1% duplicate 0.1% reorder 2% corrupt 0.5% rate 10Mbit limit 1000"},
		{spec.Impair{Loss: 5, LossBurst: 4}, "tc -n n1 qdisc replace dev e0 root handle 1: netem loss gemodel 1.3157894736842106% 25% 100% 0% limit 1000"},
	} {
		if got := Shell("n1", "e0", &c.m, 1500); got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", &c.m, got, c.want)
		}
	}
}

// TestPrivilegedSetReadClear sets each kind of impairment on a veth in a
// scratch namespace, reads it back from the kernel as it was set, and
// clears it. netem runs where the kernel has it (the VM).
func TestPrivilegedSetReadClear(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	cases := []spec.Impair{{Rate: 20e6, Limit: 50}, {Rate: 5e6, Limit: 1000}}
	if err := Check("netem"); err == nil {
		cases = append(cases, spec.Impair{Delay: 20 * time.Millisecond, Jitter: 1500 * time.Microsecond, Loss: 1, Duplicate: 0.1, Reorder: 2, Corrupt: 0.5, Rate: 10e6, Limit: 300},
			// netem again, with less: nothing of the one before may stay
			spec.Impair{Delay: 100 * time.Millisecond, Loss: 5, Limit: 1000})
	} else {
		var missing *MissingError
		if !errors.As(err, &missing) {
			t.Fatal(err)
		}
		t.Logf("netem not checked: %v", err)
	}
	err := onScratchVeth(func(h *netlink.Handle, link netlink.Link) error {
		for _, m := range cases {
			if err := Set(h, link, &m); err != nil {
				return err
			}
			st, err := Read(h, link)
			if err != nil {
				return err
			}
			if st == nil || st.Impair == nil || *st.Impair != m || st.Kind != m.Qdisc() {
				t.Errorf("set %s (%s), read back %v", &m, m.Qdisc(), st)
			}
		}
		if had, err := Clear(h, link); err != nil || !had {
			t.Errorf("clear: %v %v", had, err)
		}
		if st, err := Read(h, link); err != nil || st != nil {
			t.Errorf("after clear: %v %v", st, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestShellTree(t *testing.T) {
	for _, c := range []struct {
		m    *spec.Impair
		q    spec.Queue
		want []string
	}{
		{nil, spec.Queue{Kind: "pfifo", Limit: 50}, []string{"tc -n n1 qdisc add dev e0 root handle 1: pfifo limit 50"}},
		{&spec.Impair{Rate: 5e6}, spec.Queue{Kind: "fq_codel", Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond, Limit: 1000}, []string{
			"tc -n n1 qdisc replace dev e0 root handle 1: tbf rate 5Mbit burst 6250 limit 1514000",
			"tc -n n1 qdisc add dev e0 parent 1:1 handle 10: fq_codel limit 1000 target 5ms interval 100ms"}},
		{nil, spec.Queue{Kind: "htb", Rate: 5e6}, []string{"tc -n n1 qdisc add dev e0 root handle 1: htb default 1",
			"tc -n n1 class add dev e0 parent 1: classid 1:1 htb rate 5Mbit ceil 5Mbit"}},
		{nil, spec.Queue{Kind: "cake"}, []string{"tc -n n1 qdisc add dev e0 root handle 1: cake unlimited"}},
		{nil, spec.Queue{Kind: "fq", Limit: 100}, []string{"tc -n n1 qdisc add dev e0 root handle 1: fq plimit 100"}},
	} {
		if got := ShellTree("n1", "e0", c.m, &c.q, 1500); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got  %q\n want %q", &c.q, got, c.want)
		}
	}
}

// TestPrivilegedTree sets queues on a veth in a scratch namespace, alone
// and under a tbf, and reads the tree back; fq_codel, fq and cake where
// the kernel has them (the VM), and otherwise the refusal names the
// kernel option.
func TestPrivilegedTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	cases := []struct {
		m *spec.Impair
		q spec.Queue
	}{{nil, spec.Queue{Kind: "pfifo", Limit: 50}}, {&spec.Impair{Rate: 10e6}, spec.Queue{Kind: "pfifo", Limit: 64}}, {nil, spec.Queue{Kind: "htb", Rate: 5e6, Ceil: 10e6}},
		{&spec.Impair{Rate: 10e6}, spec.Queue{Kind: "htb", Rate: 5e6}}}
	if Check("netem") == nil { // bursty loss: a raw netem with the Gilbert-Elliott model
		cases = append(cases, struct {
			m *spec.Impair
			q spec.Queue
		}{&spec.Impair{Loss: 5, LossBurst: 4, Delay: time.Millisecond}, spec.Queue{Kind: "pfifo", Limit: 64}})
	}
	for _, kind := range []string{"fq_codel", "fq", "cake"} {
		err := CheckQueue(kind)
		var missing *MissingError
		switch {
		case err == nil:
			cases = append(cases, struct {
				m *spec.Impair
				q spec.Queue
			}{&spec.Impair{Rate: 5e6}, spec.Queue{Kind: kind, Limit: 500, Target: 5 * time.Millisecond}})
		case errors.As(err, &missing) && strings.Contains(err.Error(), configs[kind]):
			t.Logf("%s not checked: %v", kind, err)
		default:
			t.Errorf("%s: %v", kind, err)
		}
	}
	here := func(f func() error) error { return f() }
	err := onScratchVeth(func(h *netlink.Handle, link netlink.Link) error {
		for _, c := range cases {
			if c.q.Kind == "fq_codel" || c.q.Kind == "fq" {
				c.q.Target = 0
			}
			if c.q.Kind == "fq" || c.q.Kind == "cake" {
				c.q.Target, c.q.Limit = 0, 0
			}
			if err := SetTree(here, h, link, c.m, &c.q); err != nil {
				return err
			}
			st, err := Read(h, link)
			switch {
			case err != nil:
				return err
			case c.m == nil && (st == nil || st.Kind != c.q.Kind || st.Child != ""):
				t.Errorf("%s alone: read back %v", &c.q, st)
			case c.m != nil && (st == nil || st.Kind != c.m.Qdisc() || st.Child != c.q.Kind || st.Impair.Loss != c.m.Loss || st.Impair.Delay != c.m.Delay):
				t.Errorf("%s under %s: read back %v", &c.q, c.m, st)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// onScratchVeth runs fn, on a thread in a scratch namespace, with a veth
// q0 (peer q1) made there and its namespace's handle.
func onScratchVeth(fn func(h *netlink.Handle, link netlink.Link) error) error {
	return ns.Scratch(func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "q0"}, PeerName: "q1"}); err != nil {
			return err
		}
		link, err := h.LinkByName("q0")
		if err != nil {
			return err
		}
		return fn(h, link)
	})
}

// TestPrivilegedCheckKind: the probe for a kind a command line names (a
// qdisc with no options) agrees with the probe that adds the kind as
// nslab configures it, whichever this kernel has (here netem, fq_codel,
// fq and cake are missing, in the VM present); a kind no kernel has is
// missing.
func TestPrivilegedCheckKind(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	for _, kind := range []string{"netem", "tbf", "htb", "fq_codel", "fq", "cake"} {
		full := Check
		if kind != "netem" && kind != "tbf" {
			full = CheckQueue
		}
		want, got := full(kind), CheckKind(kind)
		if (want == nil) != (got == nil) {
			t.Errorf("%s: CheckKind says %v, the full probe %v", kind, got, want)
		}
	}
	var missing *MissingError
	if err := CheckKind("nosuchqdisc"); !errors.As(err, &missing) || !strings.Contains(err.Error(), "CONFIG_NET_SCH_NOSUCHQDISC") {
		t.Errorf("a kind no kernel has: %v", err)
	}
}
