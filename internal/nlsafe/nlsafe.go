// Package nlsafe holds the netlink dumps nslab makes, each retried when the
// kernel says the table changed while it was being dumped.
//
// A dump (RTM_GETLINK and its kin with NLM_F_DUMP) is read in several
// messages; when the table changes in between (another lab deploying, a
// daemon adding a route), the kernel marks the reply NLM_F_DUMP_INTR and
// vishvananda/netlink returns what it read together with
// netlink.ErrDumpInterrupted. That table may miss entries or hold stale
// ones. Every function here runs the dump again, up to Attempts times, and
// never returns a partial table: it returns the first complete one, or an
// error. CNI's netlinksafe package (containernetworking/plugins) does the
// same; nslab's linter points direct calls here (.golangci.yml, forbidigo).
//
// Each function runs in the namespace of the handle it is given; a zero
// netlink.Handle works in the calling thread's namespace.
package nlsafe

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
)

// Attempts bounds the dumps made for one table. A dump interrupted this
// many times in a row means the table changes faster than it can be read.
const Attempts = 10

// ErrChanging wraps the last netlink.ErrDumpInterrupted when every attempt
// was interrupted.
var ErrChanging = errors.New("the table kept changing while it was read")

// retry runs dump until it is not interrupted, at most Attempts times.
func retry[T any](what string, dump func() (T, error)) (T, error) {
	var err error
	for range Attempts {
		var out T
		out, err = dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return out, err
		}
	}
	var zero T
	return zero, fmt.Errorf("%s: %w (%d dumps interrupted): %w", what, ErrChanging, Attempts, err)
}

// LinkList lists every link of h's namespace.
//
// Equivalent to: ip link show
func LinkList(h *netlink.Handle) ([]netlink.Link, error) {
	return retry("list links", h.LinkList)
}

// LinkByName finds a link by name. The kernel answers it without a dump,
// except where it lacks IFLA_IFNAME lookups: then netlink dumps the links.
//
// Equivalent to: ip link show dev NAME
func LinkByName(h *netlink.Handle, name string) (netlink.Link, error) {
	return retry("find link "+name, func() (netlink.Link, error) { return h.LinkByName(name) })
}

// AddrList lists the addresses of link (every link's when nil) of family.
//
// Equivalent to: ip addr show [dev LINK]
func AddrList(h *netlink.Handle, link netlink.Link, family int) ([]netlink.Addr, error) {
	return retry("list addresses", func() ([]netlink.Addr, error) { return h.AddrList(link, family) })
}

// RouteListFiltered lists the routes that match filter on the fields of mask.
//
// Equivalent to: ip route show [table T] ...
func RouteListFiltered(h *netlink.Handle, family int, filter *netlink.Route, mask uint64) ([]netlink.Route, error) {
	return retry("list routes", func() ([]netlink.Route, error) { return h.RouteListFiltered(family, filter, mask) })
}

// QdiscList lists the qdiscs of link (every link's when nil).
//
// Equivalent to: tc qdisc show [dev LINK]
func QdiscList(h *netlink.Handle, link netlink.Link) ([]netlink.Qdisc, error) {
	return retry("list qdiscs", func() ([]netlink.Qdisc, error) { return h.QdiscList(link) })
}

// Caller is a zero handle: each request opens a socket in the namespace of
// the thread that makes it (the package-level functions of netlink).
var Caller = &netlink.Handle{}

// RuleList lists the policy routing rules of one family.
//
// Equivalent to: ip [-6] rule show
func RuleList(h *netlink.Handle, family int) ([]netlink.Rule, error) {
	return retry("list rules", func() ([]netlink.Rule, error) { return h.RuleList(family) })
}

// NeighList lists the neighbour entries of every link of one family.
//
// Equivalent to: ip [-6] neigh show
func NeighList(h *netlink.Handle, family int) ([]netlink.Neigh, error) {
	return retry("list neighbours", func() ([]netlink.Neigh, error) { return h.NeighList(0, family) })
}
