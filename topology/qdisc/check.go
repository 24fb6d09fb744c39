package qdisc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nslab/nslab/topology/host"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// configs names the kernel option behind each qdisc kind nslab uses.
var configs = map[string]string{"netem": "CONFIG_NET_SCH_NETEM", "tbf": "CONFIG_NET_SCH_TBF"}

// MissingError says that the kernel lacks a qdisc kind, with what was
// measured: the kernel configuration's line and why loading the module
// failed.
type MissingError struct {
	Kind    string
	Config  string // the option's line of /proc/config.gz, or ""
	LoadErr error
}

func (e *MissingError) Error() string {
	parts := []string{host.ConfigSays(configs[e.Kind], e.Config)}
	if e.LoadErr != nil {
		parts = append(parts, "loading the module failed: "+e.LoadErr.Error())
	}
	return fmt.Sprintf("this kernel has no %s qdisc, which needs %s (%s)", e.Kind, configs[e.Kind], strings.Join(parts, "; "))
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
	try := func() error {
		return ns.Scratch(func() error {
			h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
			if err != nil {
				return err
			}
			defer h.Close()
			return h.QdiscAdd(Build(probe, 1, 65536)) // lo is ifindex 1 in every namespace
		})
	}
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
	return &MissingError{Kind: kind, Config: host.KernelConfig(configs[kind]), LoadErr: loadErr}
}
