package lab

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nslab/nslab/internal/host"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/programs"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// KernelError is a lab whose command lines ask for kernel features this
// kernel lacks: each, what asks for it, and what the kernel said.
type KernelError struct {
	Missing []string
}

func (e *KernelError) Error() string {
	return "this kernel lacks what the lab's lines ask for: " + strings.Join(e.Missing, "; ")
}

// linkKinds are the kernel options and modules of the kinds of device a
// command line may make (ip link add ... type KIND, ip tunnel add).
var linkKinds = map[string][2]string{
	"ipip": {"CONFIG_NET_IPIP", "kernel/net/ipv4/ipip.ko"}, "gre": {"CONFIG_NET_IPGRE", "kernel/net/ipv4/ip_gre.ko"},
	"gretap": {"CONFIG_NET_IPGRE", "kernel/net/ipv4/ip_gre.ko"}, "sit": {"CONFIG_IPV6_SIT", "kernel/net/ipv6/sit.ko"},
	"vti": {"CONFIG_NET_IPVTI", "kernel/net/ipv4/ip_vti.ko"}, "ip6tnl": {"CONFIG_IPV6_TUNNEL", "kernel/net/ipv6/ip6_tunnel.ko"},
	"ip6gre": {"CONFIG_IPV6_GRE", "kernel/net/ipv6/ip6_gre.ko"}, "vti6": {"CONFIG_IPV6_VTI", "kernel/net/ipv6/ip6_vti.ko"},
	"bond": {"CONFIG_BONDING", "kernel/drivers/net/bonding/bonding.ko"}, "vlan": {"CONFIG_VLAN_8021Q", "kernel/net/8021q/8021q.ko"},
	"vxlan": {"CONFIG_VXLAN", "kernel/drivers/net/vxlan/vxlan.ko"}, "vrf": {"CONFIG_NET_VRF", "kernel/drivers/net/vrf.ko"},
	"macvlan": {"CONFIG_MACVLAN", "kernel/drivers/net/macvlan.ko"}, "ipvlan": {"CONFIG_IPVLAN", "kernel/drivers/net/ipvlan/ipvlan.ko"},
	"dummy": {"CONFIG_DUMMY", "kernel/drivers/net/dummy.ko"}, "bridge": {"CONFIG_BRIDGE", "kernel/net/bridge/bridge.ko"},
	"geneve": {"CONFIG_GENEVE", "kernel/drivers/net/geneve.ko"}, "veth": {"CONFIG_VETH", "kernel/drivers/net/veth.ko"},
	"wireguard": {"CONFIG_WIREGUARD", "kernel/drivers/net/wireguard/wireguard.ko"}, "team": {"CONFIG_NET_TEAM", "kernel/drivers/net/team/team.ko"},
}

// CheckKernel asks the kernel, from a scratch network namespace that
// nothing sees and that goes when the question is answered (see
// ns.Scratch), for each queueing discipline and kind of device lab l's
// command lines ask for (exec:, run: and startup scripts, read as the
// shell parses them: programs.KernelNeeds), loading the module where the
// kernel has it as one. Nil when the kernel has them all, or when this
// process may not make a namespace to ask in (validate without root):
// the deploy asks.
func CheckKernel(l *spec.Lab) error {
	if CheckPrivileges() != nil {
		return nil
	}
	type asked struct{ what, kind string }
	where := map[asked][]string{}
	var order []asked
	note := func(text string, at func(line int) string) {
		needs, err := programs.KernelNeeds(text)
		if err != nil {
			return // the shell says so when it runs the line
		}
		for _, k := range needs {
			a := asked{k.What, k.Kind}
			if where[a] == nil {
				order = append(order, a)
			}
			where[a] = append(where[a], at(k.Line))
		}
	}
	for _, n := range l.Nodes {
		for _, k := range []struct {
			kind  string
			lines []string
		}{{"exec", n.Exec}, {"run", n.Run}} {
			kind := k.kind
			for i, line := range k.lines {
				note(line, func(int) string {
					return fmt.Sprintf("node %s's %s line %d (%s)", n.Name, kind, i+1, position(l, fmt.Sprintf("nodes.%s.%s[%d]", n.Name, kind, i)))
				})
			}
		}
		for _, sc := range n.Startup {
			note(sc.Text, func(line int) string { return scriptPlace(n, sc, line) })
		}
	}
	e := &KernelError{}
	for _, a := range order {
		var err error
		if a.what == "qdisc" {
			err = qdisc.CheckKind(a.kind)
		} else {
			err = checkLinkKind(a.kind)
		}
		if err == nil {
			continue
		}
		at := where[a]
		if len(at) > 2 {
			at = append(at[:2:2], fmt.Sprintf("%d more", len(where[a])-2))
		}
		e.Missing = append(e.Missing, fmt.Sprintf("%s, for %s: %v", a.kind, strings.Join(at, " and "), err))
	}
	if len(e.Missing) == 0 {
		return nil
	}
	return e
}

// knows is the answer of a device made or refused other than for its kind:
// made, or refused by the kernel for what it lacks (options, a parent
// device), the kernel knows the kind; an error that is no kernel's
// answer (no scratch namespace without root) says nothing of it.
func knows(err error) error {
	var errno unix.Errno
	if err == nil || errors.As(err, &errno) && errno != unix.EPERM {
		return nil
	}
	return fmt.Errorf("cannot ask the kernel: %w", err)
}

// checkLinkKind asks the kernel, from a scratch namespace, whether it
// makes devices of kind: it adds one with no options, which a kernel
// without the kind refuses with EOPNOTSUPP (any other answer, made or
// refused for want of options, says it has the kind); then it loads the
// kind's module and asks again.
func checkLinkKind(kind string) error {
	try := func() error {
		return ns.ScratchHandle(func(h *netlink.Handle) error {
			return h.LinkAdd(&netlink.GenericLink{LinkAttrs: netlink.LinkAttrs{Name: "nslabprobe0"}, LinkType: kind})
		})
	}
	if err := try(); !errors.Is(err, unix.EOPNOTSUPP) {
		return knows(err)
	}
	cfg := linkKinds[kind]
	if cfg[0] == "" {
		return fmt.Errorf("this kernel makes no %s devices (the kernel does not know the kind)", kind)
	}
	loadErr := host.LoadModule(cfg[1])
	if loadErr == nil {
		if err := try(); !errors.Is(err, unix.EOPNOTSUPP) {
			return knows(err)
		}
	}
	msg := fmt.Sprintf("this kernel makes no %s devices, which need %s (%s", kind, cfg[0], host.ConfigSays(cfg[0], host.KernelConfig(cfg[0])))
	if loadErr != nil {
		msg += "; loading the module failed: " + loadErr.Error()
	}
	return errors.New(msg + ")")
}
