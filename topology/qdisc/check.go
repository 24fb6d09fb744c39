package qdisc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nslab/nslab/internal/host"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// configs names the kernel option behind each qdisc kind nslab uses.
var configs = map[string]string{"netem": "CONFIG_NET_SCH_NETEM", "tbf": "CONFIG_NET_SCH_TBF", "pfifo": "CONFIG_NET_SCHED",
	"fq_codel": "CONFIG_NET_SCH_FQ_CODEL", "fq": "CONFIG_NET_SCH_FQ", "cake": "CONFIG_NET_SCH_CAKE", "htb": "CONFIG_NET_SCH_HTB"}

// MissingError says that the kernel lacks a qdisc kind, with what was
// measured: the kernel configuration's line and why loading the module
// failed.
type MissingError struct {
	Kind    string
	Config  string // the option's line of /proc/config.gz, or ""
	LoadErr error
}

func (e *MissingError) Error() string {
	parts := []string{host.ConfigSays(configOf(e.Kind), e.Config)}
	if e.LoadErr != nil {
		parts = append(parts, "loading the module failed: "+e.LoadErr.Error())
	}
	return fmt.Sprintf("this kernel has no %s qdisc, which needs %s (%s)", e.Kind, configOf(e.Kind), strings.Join(parts, "; "))
}

// configOf is the kernel option of qdisc kind.
func configOf(kind string) string {
	if c := configs[kind]; c != "" {
		return c
	}
	return "CONFIG_NET_SCH_" + strings.ToUpper(kind)
}

// Check asks the kernel whether it has the qdisc kind, by adding one to lo
// in a scratch namespace that disappears afterwards; when it has not, it
// loads the module (sch_KIND.ko) and asks again. The error is a
// *MissingError when the kernel lacks it.
func Check(kind string) error {
	probe := map[string]*spec.Impair{"netem": {Delay: 1}, "tbf": {Rate: 1e6}}[kind]
	if probe == nil {
		return fmt.Errorf("qdisc kind %q is not one nslab uses", kind)
	}
	return check(kind, func(h *netlink.Handle) error {
		return h.QdiscAdd(Build(probe, 1, 65536)) // lo is ifindex 1 in every namespace
	})
}

// CheckQueue is Check for a queue discipline's kind (spec.QueueKinds).
func CheckQueue(kind string) error {
	if configs[kind] == "" || kind == "netem" || kind == "tbf" {
		return fmt.Errorf("queue discipline %q is not one nslab uses", kind)
	}
	q := &spec.Queue{Kind: kind, Rate: 1e6}
	return check(kind, func(h *netlink.Handle) error {
		if kind == "htb" {
			return h.QdiscAdd(netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: 1, Parent: netlink.HANDLE_ROOT, Handle: rootHandle}))
		}
		return send(newQdisc(1, netlink.HANDLE_ROOT, rootHandle, kind, queueOptions(q))) // lo is ifindex 1
	})
}

// check adds a qdisc of kind with add, from a thread in a scratch
// namespace; when the kernel has no such kind, it loads the module and
// tries again.
func check(kind string, add func(h *netlink.Handle) error) error {
	try := func() error { return ns.ScratchHandle(add) }
	err := try()
	if !errors.Is(err, unix.ENOENT) {
		return err
	}
	loadErr := host.LoadModule("kernel/net/sched/sch_" + kind + ".ko")
	if loadErr == nil {
		if err = try(); !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return &MissingError{Kind: kind, Config: host.KernelConfig(configOf(kind)), LoadErr: loadErr}
}

// CheckKind is Check for any qdisc kind a command line may name (tc
// qdisc add ... KIND): it adds one with no options, which a kernel that
// has the kind refuses for want of them (EINVAL) or takes, and one that
// lacks it refuses with ENOENT (a *MissingError). Any other error (no
// scratch namespace without root) says nothing of the kind.
func CheckKind(kind string) error {
	err := check(kind, func(h *netlink.Handle) error {
		return h.QdiscAdd(&netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: 1, Parent: netlink.HANDLE_ROOT, Handle: rootHandle}, QdiscType: kind})
	})
	if errors.Is(err, unix.EINVAL) {
		return nil // refused for want of options: the kernel knows the kind
	}
	return err
}
