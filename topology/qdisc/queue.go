package qdisc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/nslab/nslab/internal/units"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Queues (spec.Queue): a queue discipline as an interface's root, or as
// the child of its impairment (handle 10: under class 1:1 of the netem or
// tbf root), where it holds what waits for the impairment's rate.
//
// pfifo, fq_codel, fq and cake go as raw RTM_NEWQDISC messages: the
// netlink library has no pfifo or cake, and leaves fq_codel's target out
// of what it sends. htb goes through the library (its qdisc and class).

// tcaCakeBaseRate64 is TCA_CAKE_BASE_RATE64 of linux/pkt_sched.h (after
// TCA_CAKE_UNSPEC and TCA_CAKE_PAD), which the netlink library lacks.
const tcaCakeBaseRate64 = 2

// childHandle is the handle of a queue under an impairment.
var childHandle = netlink.MakeHandle(0x10, 0)

// SetTree makes m (nil: none) and q (nil: none) the egress of link, in
// the namespace of handle h: m as the root with q as its child, or q
// alone as the root. Whatever root the link had goes first. inNS runs a
// function on a thread in that namespace (ns.NS.Do), for the raw
// messages.
func SetTree(inNS func(func() error) error, h *netlink.Handle, link netlink.Link, m *spec.Impair, q *spec.Queue) error {
	switch {
	case m != nil && m.LossBurst > 0:
		if err := setBursty(inNS, h, link, m); err != nil {
			return err
		}
	case m != nil:
		if err := Set(h, link, m); err != nil {
			return err
		}
	default:
		if _, err := Clear(h, link); err != nil {
			return err
		}
	}
	if q == nil {
		return nil
	}
	if err := CheckQueue(q.Kind); err != nil {
		return err
	}
	parent, handle := uint32(netlink.HANDLE_ROOT), rootHandle
	if m != nil {
		parent, handle = netlink.MakeHandle(1, 1), childHandle
	}
	if err := addQueue(inNS, h, link.Attrs().Index, parent, handle, q); err != nil {
		return fmt.Errorf("add the %s qdisc (%s) on %s: %w", q.Kind, q, link.Attrs().Name, err)
	}
	return nil
}

// addQueue adds q at parent with handle on the link with index ifindex.
func addQueue(inNS func(func() error) error, h *netlink.Handle, ifindex int, parent, handle uint32, q *spec.Queue) error {
	if q.Kind == "htb" {
		htb := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: ifindex, Parent: parent, Handle: handle})
		htb.Defcls = 1
		if err := h.QdiscAdd(htb); err != nil {
			return err
		}
		ceil := q.Ceil
		if ceil == 0 {
			ceil = q.Rate
		}
		class := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: ifindex, Parent: handle, Handle: handle | 1},
			netlink.HtbClassAttrs{Rate: q.Rate, Ceil: ceil})
		return h.ClassAdd(class)
	}
	msg := newQdisc(ifindex, parent, handle, q.Kind, queueOptions(q))
	return inNS(func() error { return send(msg) })
}

// newQdisc is the RTM_NEWQDISC message that adds a qdisc of kind with
// options (nil: the kernel's defaults) at parent, with handle, on the
// link with index ifindex.
func newQdisc(ifindex int, parent, handle uint32, kind string, options *nl.RtAttr) []byte {
	req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(ifindex), Handle: handle, Parent: parent})
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated(kind)))
	if options != nil {
		req.AddData(options)
	}
	return req.Serialize()
}

// queueOptions is q's TCA_OPTIONS (nil: the kernel's defaults).
func queueOptions(q *spec.Queue) *nl.RtAttr {
	u32 := func(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
	switch q.Kind {
	case "pfifo":
		if q.Limit == 0 {
			return nil
		}
		return nl.NewRtAttr(nl.TCA_OPTIONS, u32(uint32(q.Limit))) // struct tc_fifo_qopt
	case "fq_codel":
		o := nl.NewRtAttr(nl.TCA_OPTIONS|unix.NLA_F_NESTED, nil)
		if q.Target > 0 {
			o.AddRtAttr(nl.TCA_FQ_CODEL_TARGET, u32(uint32(q.Target.Microseconds())))
		}
		if q.Limit > 0 {
			o.AddRtAttr(nl.TCA_FQ_CODEL_LIMIT, u32(uint32(q.Limit)))
		}
		if q.Interval > 0 {
			o.AddRtAttr(nl.TCA_FQ_CODEL_INTERVAL, u32(uint32(q.Interval.Microseconds())))
		}
		return o
	case "fq":
		o := nl.NewRtAttr(nl.TCA_OPTIONS|unix.NLA_F_NESTED, nil)
		if q.Limit > 0 {
			o.AddRtAttr(nl.TCA_FQ_PLIMIT, u32(uint32(q.Limit)))
		}
		return o
	case "cake":
		o := nl.NewRtAttr(nl.TCA_OPTIONS|unix.NLA_F_NESTED, nil)
		o.AddRtAttr(tcaCakeBaseRate64, binary.NativeEndian.AppendUint64(nil, q.Bandwidth/8))
		return o
	}
	return nil
}

// send sends one netlink request from a socket of the calling thread's
// namespace and returns the kernel's answer to it.
func send(msg []byte) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4 {
			if code := int32(binary.NativeEndian.Uint32(m.Data[:4])); code != 0 {
				return unix.Errno(-code)
			}
			return nil
		}
	}
	return errors.New("no answer from the kernel")
}

// ShellTree is the tc commands that SetTree runs on a link without a
// qdisc of its own.
func ShellTree(nsName, ifname string, m *spec.Impair, q *spec.Queue, mtu int) []string {
	var out []string
	where := "root handle 1:"
	if m != nil {
		out = append(out, Shell(nsName, ifname, m, mtu))
		where = "parent 1:1 handle 10:"
	}
	if q == nil {
		return out
	}
	head := fmt.Sprintf("tc -n %s qdisc add dev %s %s ", nsName, ifname, where)
	if q.Kind == "htb" {
		major := "1:"
		if m != nil {
			major = "10:"
		}
		ceil := q.Ceil
		if ceil == 0 {
			ceil = q.Rate
		}
		return append(out, head+"htb default 1",
			fmt.Sprintf("tc -n %s class add dev %s parent %s classid %s1 htb rate %s ceil %s", nsName, ifname, major, major, units.FormatBitRate(q.Rate), units.FormatBitRate(ceil)))
	}
	w := []string{q.Kind}
	switch q.Kind {
	case "cake":
		if q.Bandwidth > 0 {
			w = append(w, "bandwidth", units.FormatBitRate(q.Bandwidth))
		} else {
			w = append(w, "unlimited")
		}
	default:
		if q.Limit > 0 {
			w = append(w, "limit", fmt.Sprint(q.Limit))
		}
		if q.Target > 0 {
			w = append(w, "target", spec.FormatDelay(q.Target))
		}
		if q.Interval > 0 {
			w = append(w, "interval", spec.FormatDelay(q.Interval))
		}
	}
	if q.Kind == "fq" && q.Limit > 0 {
		w = []string{"fq", "plimit", fmt.Sprint(q.Limit)}
	}
	return append(out, head+strings.Join(w, " "))
}
