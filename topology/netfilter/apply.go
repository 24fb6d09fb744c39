package netfilter

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// newConn is a connection to nftables in the namespace nsFD refers to,
// able to carry a table of thousands of rules in one batch (bigBatch).
func newConn(nsFD int) (*nftables.Conn, error) {
	return nftables.New(nftables.WithNetNSFd(nsFD), nftables.WithSockOptions(bigBatch))
}

// batchBuffer is the socket's buffer each way: a batch of a rule per
// message and an acknowledgement of each. A firewall of 150 rules
// overflowed the default receive buffer (about 200 KiB, each
// acknowledgement carrying its whole request), and one of 2,000 rules the
// send buffer; 8 MiB holds tens of thousands.
const batchBuffer = 8 << 20

// bigBatch has the kernel acknowledge each message without a copy of it
// (NETLINK_CAP_ACK) and gives the socket batchBuffer each way, past the
// machine's rmem_max and wmem_max when root (SO_RCVBUFFORCE); else as
// far as those allow.
func bigBatch(c *netlink.Conn) error {
	if err := c.SetOption(netlink.CapAcknowledge, true); err != nil {
		return fmt.Errorf("NETLINK_CAP_ACK: %w", err)
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		for _, o := range [][2]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}} {
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, o[0], batchBuffer) != nil { // not root: as far as rmem_max/wmem_max allow
				serr = errors.Join(serr, unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, o[1], batchBuffer))
			}
		}
	})
	return errors.Join(err, serr)
}

// Apply creates node n's table in the namespace nsFD refers to, in one
// netlink transaction: the table, its chains and rules appear together or
// not at all. It runs in the caller's namespace.
//
// Equivalent to the nft lines of Shell.
func Apply(nsFD int, labName string, n *spec.Node) error {
	c, err := newConn(nsFD)
	if err != nil {
		return fmt.Errorf("nftables in %s: %w", n.Name, err)
	}
	queueTable(c, labName, n, true)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables table inet %s in %s: %w", Table, n.Name, err)
	}
	return nil
}

// Shell is Apply as nft commands run in namespace nsName.
func Shell(nsName, labName string, n *spec.Node) []string {
	run := func(cmd string) string { return fmt.Sprintf("ip netns exec %s nft %s", nsName, cmd) }
	out := []string{run("add table inet " + Table)}
	if n.Flowtable {
		out = append(out, run(fmt.Sprintf("add flowtable inet %s %s '{ hook ingress priority filter; devices = { %s }; }'", Table, Flowtable, strings.Join(flowDevices(n), ", "))))
	}
	for _, d := range chainsOf(n) {
		out = append(out, run(fmt.Sprintf("add chain inet %s %s %s", Table, d.name, d.shell)))
	}
	for _, r := range rulesOf(labName, n) {
		out = append(out, run(fmt.Sprintf("'add rule inet %s %s %s comment \"%s\"'", Table, r.chain, r.shell, r.comment)))
	}
	return out
}

// Describe is a one-line summary of node n's rules, for the plan.
func Describe(n *spec.Node) string {
	var parts []string
	if len(n.NAT) > 0 {
		parts = append(parts, fmt.Sprintf("%d NAT rule%s", len(n.NAT), plural(len(n.NAT))))
	}
	if fw := n.Firewall; fw != nil {
		parts = append(parts, fmt.Sprintf("firewall with %d rule%s, policy %s", len(fw.Rules), plural(len(fw.Rules)), fw.Policy))
	}
	if n.Flowtable {
		parts = append(parts, "flowtable over "+strings.Join(flowDevices(n), ", "))
	}
	return strings.Join(parts, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Check asks the kernel, in a scratch namespace, whether it can hold node
// n's table: nf_tables, its NAT, masquerade and conntrack expressions,
// and its flowtable (over no devices: the scratch namespace has none of
// the node's).
func Check(labName string, n *spec.Node) error {
	return ns.Scratch(func() error {
		f, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			return err
		}
		defer f.Close()
		c, err := newConn(int(f.Fd()))
		if err != nil {
			return fmt.Errorf("nftables: %w", err)
		}
		queueTable(c, labName, n, false)
		return c.Flush()
	})
}

// Counted is one rule of a node's table as the kernel holds it, with its
// counter.
type Counted struct {
	Chain   string `json:"chain"`
	Comment string `json:"comment"` // see Comment
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

// ChainInfo is one chain of the table as the kernel holds it.
type ChainInfo struct {
	Name   string `json:"name"`
	Hook   string `json:"hook"`
	Policy string `json:"policy"`
}

// Read returns nslab's table in the namespace nsFD refers to: its chains
// and rules with their counters; found is false when there is no such
// table. It reads again when the ruleset changed during a read (see
// consistent). It runs in the caller's namespace.
func Read(nsFD int) (chains []ChainInfo, rules []Counted, found bool, err error) {
	c, err := newConn(nsFD)
	if err != nil {
		return nil, nil, false, err
	}
	err = consistent(nsFD, func() error {
		chains, rules, found, err = readOnce(c)
		return err
	})
	return chains, rules, found, err
}

// readOnce lists nslab's table once.
func readOnce(c *nftables.Conn) (chains []ChainInfo, rules []Counted, found bool, err error) {
	t, err := c.ListTableOfFamily(Table, nftables.TableFamilyINet)
	if err != nil {
		if isNotFound(err) {
			return nil, nil, false, nil
		}
		return nil, nil, false, fmt.Errorf("list table inet %s: %w", Table, err)
	}
	all, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, nil, true, fmt.Errorf("list chains: %w", err)
	}
	for _, ch := range all {
		if ch.Table.Name != Table {
			continue
		}
		chains = append(chains, ChainInfo{Name: ch.Name, Hook: hookName(ch.Hooknum), Policy: policyName(ch.Policy)})
		rs, err := c.GetRules(t, ch)
		if err != nil {
			return nil, nil, true, fmt.Errorf("list rules of %s: %w", ch.Name, err)
		}
		for _, r := range rs {
			cr := Counted{Chain: ch.Name, Comment: CommentOf(r.UserData)}
			for _, e := range r.Exprs {
				if ctr, ok := e.(*expr.Counter); ok {
					cr.Packets, cr.Bytes = ctr.Packets, ctr.Bytes
				}
			}
			rules = append(rules, cr)
		}
	}
	return chains, rules, true, nil
}

func isNotFound(err error) bool {
	return strings.Contains(err.Error(), unix.ENOENT.Error()) || strings.Contains(err.Error(), "no such file")
}

func hookName(h *nftables.ChainHook) string {
	if h == nil {
		return ""
	}
	return map[nftables.ChainHook]string{*nftables.ChainHookPrerouting: "prerouting", *nftables.ChainHookPostrouting: "postrouting", *nftables.ChainHookForward: "forward",
		*nftables.ChainHookInput: "input", *nftables.ChainHookOutput: "output"}[*h]
}

func policyName(p *nftables.ChainPolicy) string {
	if p == nil {
		return ""
	}
	if *p == nftables.ChainPolicyDrop {
		return spec.Drop
	}
	return spec.Accept
}

// Replace puts node n's table in place of the one the namespace nsFD
// refers to holds (if any), in one netlink transaction: the old rules go
// and the new ones appear together, so no packet meets neither. With no
// rules in n, the table goes. It runs in the caller's namespace.
//
// Equivalent to: nft delete table inet nslab; then the nft lines of Shell.
func Replace(nsFD int, labName string, n *spec.Node) error {
	c, err := newConn(nsFD)
	if err != nil {
		return fmt.Errorf("nftables in %s: %w", n.Name, err)
	}
	_, err = c.ListTableOfFamily(Table, nftables.TableFamilyINet)
	switch {
	case err == nil:
		c.DelTable(&nftables.Table{Name: Table, Family: nftables.TableFamilyINet})
	case !isNotFound(err):
		return fmt.Errorf("list table inet %s in %s: %w", Table, n.Name, err)
	case !n.HasNetfilter():
		return nil // none there, none wanted
	}
	if n.HasNetfilter() {
		queueTable(c, labName, n, true)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("replace nftables table inet %s in %s: %w", Table, n.Name, err)
	}
	return nil
}

// ShellReplace is Replace as nft commands run in namespace nsName.
func ShellReplace(nsName, labName string, n *spec.Node) []string {
	out := []string{fmt.Sprintf("ip netns exec %s nft delete table inet %s 2>/dev/null || true", nsName, Table)}
	if n.HasNetfilter() {
		out = append(out, Shell(nsName, labName, n)...)
	}
	return out
}

// queueTable queues node n's table, its flowtable (over the node's
// interfaces when devices), chains and rules on c, for its next Flush.
func queueTable(c *nftables.Conn, labName string, n *spec.Node, devices bool) {
	t := c.AddTable(&nftables.Table{Name: Table, Family: nftables.TableFamilyINet})
	if n.Flowtable {
		ft := &nftables.Flowtable{Table: t, Name: Flowtable, Hooknum: nftables.FlowtableHookIngress, Priority: nftables.FlowtablePriorityFilter}
		if devices {
			ft.Devices = flowDevices(n)
		}
		c.AddFlowtable(ft)
	}
	chains := map[string]*nftables.Chain{}
	for _, d := range chainsOf(n) {
		policy := d.policy
		chains[d.name] = c.AddChain(&nftables.Chain{Name: d.name, Table: t, Type: d.kind, Hooknum: d.hook, Priority: d.prio, Policy: &policy})
	}
	for _, r := range rulesOf(labName, n) {
		c.AddRule(&nftables.Rule{Table: t, Chain: chains[r.chain], Exprs: r.exprs, UserData: comment(r.comment)})
	}
}

// Remove deletes the nslab table of the namespace nsFD refers to, if it
// has one. It runs in the caller's namespace.
//
// Equivalent to: nft delete table inet nslab
func Remove(nsFD int) error {
	c, err := newConn(nsFD)
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	if _, err := c.ListTableOfFamily(Table, nftables.TableFamilyINet); err != nil {
		if isNotFound(err) {
			return nil
		}
		return fmt.Errorf("list table inet %s: %w", Table, err)
	}
	c.DelTable(&nftables.Table{Name: Table, Family: nftables.TableFamilyINet})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("delete table inet %s: %w", Table, err)
	}
	return nil
}

// FlowtableInfo is a flowtable of nslab's table as the kernel holds it.
type FlowtableInfo struct {
	Name    string   `json:"name"`
	Devices []string `json:"devices"`
}

// Flowtables lists the flowtables of nslab's table in the namespace nsFD
// refers to (none when it has no table). It runs in the caller's
// namespace.
func Flowtables(nsFD int) ([]FlowtableInfo, error) {
	c, err := newConn(nsFD)
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	fts, err := c.ListFlowtables(&nftables.Table{Name: Table, Family: nftables.TableFamilyINet})
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list flowtables of inet %s: %w", Table, err)
	}
	out := make([]FlowtableInfo, 0, len(fts))
	for _, f := range fts {
		out = append(out, FlowtableInfo{Name: f.Name, Devices: f.Devices})
	}
	return out, nil
}
