package lab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nslab/nslab/internal/ethtool"
	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/lab/inspect"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/netfilter"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/qdisc"
	"github.com/nslab/nslab/topology/spec"
	"github.com/vishvananda/netlink"
)

// Variants (see spec.Variant) change a deployed lab in place and undo the
// change. A variant's changes are steps like a deploy's, made from the
// lab as deployed to the variant, and undone by the steps from the
// variant back to the lab as deployed. What the lab as deployed does not
// set (a sysctl only the variant sets, RPS masks of an unplaced node) is
// read before the variant changes it and recorded in the state file with
// the variant's name, ahead: a run killed mid-variant leaves a state that
// says what to give back, and the next ApplyVariant (or destroy, with the
// namespaces) gives it back.

// savedKey names one saved value: a sysctl or a sysfs file of a node.
func savedKey(node, kind, name string) string { return node + " " + kind + " " + name }

// ApplyVariant changes deployed lab l (as deployed: the file's lab) to
// its variant name (spec.BaseVariant: back to the lab as deployed), from
// whatever variant its state says is applied: that one is undone first.
// On a failure, what the variant changed is undone. It runs in the
// caller's namespace, each change through the node's namespace.
func (m *Manager) ApplyVariant(ctx context.Context, l *spec.Lab, name string) error {
	v := l.Variant(name)
	if v == nil {
		return fmt.Errorf("lab %s has no variant %q (its variants: %s)", l.Name, name, strings.Join(append([]string{spec.BaseVariant}, l.VariantNames()...), ", "))
	}
	unlock, err := m.lock()
	if err != nil {
		return err
	}
	defer unlock()
	st, err := m.Recorded(l.Name)
	if err != nil {
		return err
	}
	if cur := st.Variant; cur != nil && cur.Name == name {
		return nil
	}
	d, err := m.openDeployed(ctx, l, st)
	if err != nil {
		return err
	}
	defer d.close()
	if err := d.undoVariant(); err != nil {
		return err
	}
	if v.Lab == l {
		return nil
	}
	if err := CheckVariantKernel(v); err != nil {
		return err
	}
	saved, err := d.capture(l, v.Lab)
	if err != nil {
		return fmt.Errorf("variant %s: read what it changes: %w", name, err)
	}
	st.Variant = &state.VariantRecord{Name: name, Saved: saved}
	if err := m.saveState(st); err != nil {
		return err
	}
	steps := append(changeSteps(l, v.Lab, saved), commandSteps(v.Lab, v, "before", v.Before)...)
	if err := d.run(steps); err != nil {
		return fmt.Errorf("apply variant %s: %w%s", name, err, undoNote(d.undoVariant()))
	}
	return nil
}

// CheckVariantKernel checks, in a scratch namespace, that this kernel has
// every qdisc variant v's impairments and queues need, and can hold its
// nodes' nftables tables (a flowtable); it changes nothing of any lab.
func CheckVariantKernel(v *spec.Variant) error {
	if problems := append(checkQdiscs(v.Lab), checkNetfilter(v.Lab)...); len(problems) > 0 {
		return fmt.Errorf("variant %s: cannot apply it, nothing was changed:\n  %s", v.Name, strings.Join(problems, "\n  "))
	}
	return nil
}

// undoNote says how undoing a failed variant went.
func undoNote(err error) string {
	if err != nil {
		return fmt.Sprintf("; undoing it failed too: %v (destroy the lab)", err)
	}
	return "; what it changed was undone"
}

// undoVariant undoes the variant d's state says is applied, if any: its
// after: commands, then the steps back to the lab as deployed, then the
// state forgets it.
func (d *deployer) undoVariant() error {
	cur := d.st.Variant
	if cur == nil {
		return nil
	}
	v := d.lab.Variant(cur.Name)
	if v == nil {
		return fmt.Errorf("lab %s has variant %s applied, which its file no longer defines: destroy it and deploy it again", d.lab.Name, cur.Name)
	}
	steps := append(commandSteps(v.Lab, v, "after", v.After), changeSteps(v.Lab, d.lab, cur.Saved)...)
	if err := d.run(steps); err != nil {
		return fmt.Errorf("undo variant %s: %w", cur.Name, err)
	}
	d.st.Variant = nil
	return d.m.saveState(d.st)
}

// VariantPlan is the steps that apply variant name to deployed lab l and
// those that undo it, for --dry-run (values read before a change show as
// such).
func VariantPlan(l *spec.Lab, name string) (apply, undo []Step, err error) {
	v := l.Variant(name)
	if v == nil {
		return nil, nil, fmt.Errorf("lab %s has no variant %q", l.Name, name)
	}
	if v.Lab == l {
		return nil, nil, nil
	}
	apply = append(changeSteps(l, v.Lab, nil), commandSteps(v.Lab, v, "before", v.Before)...)
	undo = append(commandSteps(v.Lab, v, "after", v.After), changeSteps(v.Lab, l, nil)...)
	return apply, undo, nil
}

// openDeployed opens a deployer on deployed lab l: a netlink handle in
// each node's namespace.
func (m *Manager) openDeployed(ctx context.Context, l *spec.Lab, st *state.State) (*deployer, error) {
	d := &deployer{ctx: ctx, m: m, lab: l, st: st, handles: map[string]*netlink.Handle{}, index: map[spec.Endpoint]int{}}
	for _, n := range l.Nodes {
		err := d.inNS(n.Name, func(x *ns.NS) error {
			h, err := x.NetlinkHandle()
			d.handles[n.Name] = h
			return err
		})
		if err != nil {
			d.close()
			return nil, err
		}
	}
	return d, nil
}

// run runs steps in order, stopping at the first that fails.
func (d *deployer) run(steps []Step) error {
	for _, s := range steps {
		if err := d.ctx.Err(); err != nil {
			return err
		}
		if err := s.Do(d); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	return nil
}

// changeSteps are the steps that take a deployed lab from version from to
// version to (the lab as deployed and a variant's, either way), node by
// node: sysctls, impairments, the nftables table, CPU placement. saved
// gives what to restore where to does not set a value from sets.
func changeSteps(from, to *spec.Lab, saved map[string]string) []Step {
	steps := machineChange(from, to)
	for _, n := range to.Nodes {
		f := from.Node(n.Name)
		steps = append(steps, sysctlChange(to, f, n, saved)...)
		steps = append(steps, impairChanges(to, f, n)...)
		steps = append(steps, netfilterChange(to, f, n)...)
		queues := queuesChange(to, f, n)
		steps = append(steps, queues...)
		steps = append(steps, placementChange(to, f, n, saved, len(queues) > 0)...)
		steps = append(steps, fastPathChange(to, f, n)...)
		steps = append(steps, offloadsChange(to, f, n, saved)...)
		steps = append(steps, napiChange(to, f, n, saved)...)
	}
	return steps
}

// napiChange writes the NAPI files of n's interfaces whose settings differ
// from f's: n's values, and where only f gives one, what the file had
// before (saved).
func napiChange(l *spec.Lab, f, n *spec.Node, saved map[string]string) []Step {
	var steps []Step
	for _, i := range n.Interfaces {
		fi := f.Interface(i.Name)
		if fi == nil || napiKey(fi.NAPI) == napiKey(i.NAPI) {
			continue
		}
		var files []napiFile
		if i.NAPI != nil {
			files = napiFiles(i.NAPI)
		}
		for _, name := range inspect.NAPIFiles {
			if v, ok := saved[savedKey(n.Name, "napi", i.Name+" "+name)]; ok && !hasNAPIFile(files, name) {
				files = append(files, napiFile{name, v})
			}
		}
		if len(files) == 0 {
			continue
		}
		steps = append(steps, Step{
			Name:  fmt.Sprintf("NAPI %s:%s (%s)", n.Name, i.Name, napiFileWords(files)),
			Shell: func() []string { return shNAPI(l.Namespace(n.Name), i.Name, files) },
			Do:    func(d *deployer) error { return d.writeNAPI(n.Name, i.Name, files) },
		})
	}
	return steps
}

// napiKey compares NAPI settings.
func napiKey(s *spec.NAPI) string {
	if s == nil {
		return ""
	}
	return s.Words()
}

func hasNAPIFile(files []napiFile, name string) bool {
	for _, f := range files {
		if f.name == name {
			return true
		}
	}
	return false
}

func napiFileWords(files []napiFile) string {
	var out []string
	for _, f := range files {
		out = append(out, f.name+" "+f.value)
	}
	return strings.Join(out, ", ")
}

// offloadsChange sets the offloads of n's interfaces that differ from f's:
// n's value, or where only f sets one, what the interface had before
// (saved).
func offloadsChange(l *spec.Lab, f, n *spec.Node, saved map[string]string) []Step {
	var steps []Step
	for _, i := range n.Interfaces {
		fi := f.Interface(i.Name)
		if fi == nil {
			continue
		}
		want := map[string]bool{}
		for _, k := range spec.OffloadNames {
			now, inTo := i.Offloads[k]
			was, inFrom := fi.Offloads[k]
			switch {
			case inTo && (!inFrom || now != was):
				want[k] = now
			case !inTo && inFrom:
				if v, ok := saved[savedKey(n.Name, "offload", i.Name+" "+k)]; ok {
					want[k] = v == "on"
				}
			}
		}
		if len(want) == 0 {
			continue
		}
		steps = append(steps, Step{
			Name:  fmt.Sprintf("offloads %s:%s (%s)", n.Name, i.Name, spec.OffloadWords(want)),
			Shell: func() []string { return []string{shOffloads(l.Namespace(n.Name), i.Name, want)} },
			Do:    func(d *deployer) error { return d.setOffloads(n.Name, i.Name, want) },
		})
	}
	return steps
}

// fastPathChange attaches or detaches node n's XDP fast path where f (the
// version it changes from) has it otherwise.
func fastPathChange(l *spec.Lab, f, n *spec.Node) []Step {
	on := n.Forwarding.FastPath == spec.FastPathXDP
	if on == (f.Forwarding.FastPath == spec.FastPathXDP) {
		return nil
	}
	verb, how := "detach", ""
	if on {
		verb, how = "attach", xdpPlacementWords(n)
	} else if xdpPlacementWords(n) != "" {
		how = "; its NAPI threaded no more"
	}
	return []Step{{
		Name: fmt.Sprintf("%s the XDP fast path of %s%s", verb, n.Name, how),
		Shell: func() []string {
			return []string{fmt.Sprintf("# %s the XDP fast path of %s (nslab, topology/xdpfwd)%s", verb, n.Name, how)}
		},
		Do: func(d *deployer) error { return d.fastPath(l, n, on) },
	}}
}

// sysctlChange writes the sysctls whose value differs between f and n
// (versions of one node), n's value or, where n does not set it, the
// saved one.
func sysctlChange(l *spec.Lab, f, n *spec.Node, saved map[string]string) []Step {
	want := map[string]string{}
	for _, s := range n.Sysctls {
		want[s.Key] = s.Value
	}
	var kvs []spec.Sysctl
	for _, s := range f.Sysctls {
		if _, ok := want[s.Key]; !ok {
			kvs = append(kvs, spec.Sysctl{Key: s.Key, Value: savedOr(saved, savedKey(n.Name, "sysctl", s.Key))})
		}
	}
	for _, s := range n.Sysctls {
		if old, ok := sysctlOf(f, s.Key); !ok || old != s.Value {
			kvs = append(kvs, s)
		}
	}
	if len(kvs) == 0 {
		return nil
	}
	var what []string
	for _, s := range kvs {
		what = append(what, s.Key+"="+s.Value)
	}
	return []Step{{
		Name:  fmt.Sprintf("set in %s: %s", n.Name, strings.Join(what, ", ")),
		Shell: func() []string { return []string{shSysctls(l.Namespace(n.Name), kvs)} },
		Do:    func(d *deployer) error { return d.configureNode(n, kvs) },
	}}
}

// savedOr is the saved value of key, or a placeholder that says what it
// stands for (in a dry run's script).
func savedOr(saved map[string]string, key string) string {
	if v, ok := saved[key]; ok {
		return v
	}
	return "<the value before the variant>"
}

func sysctlOf(n *spec.Node, key string) (string, bool) {
	for _, s := range n.Sysctls {
		if s.Key == key {
			return s.Value, true
		}
	}
	return "", false
}

// impairChanges sets or clears each interface's impairment where f and n
// differ.
func impairChanges(l *spec.Lab, f, n *spec.Node) []Step {
	var steps []Step
	for _, i := range n.Interfaces {
		old := f.Interface(i.Name)
		if old == nil {
			old = &spec.Interface{} // one the other version does not list (lo, which a lab's model adds)
		}
		if fmt.Sprint(old.Impair) == fmt.Sprint(i.Impair) && fmt.Sprint(old.Queue) == fmt.Sprint(i.Queue) {
			continue
		}
		name, shell := fmt.Sprintf("clear the impairment of %s:%s", n.Name, i.Name), []string{qdisc.ShellClear(l.Namespace(n.Name), i.Name)}
		if i.Impair != nil || i.Queue != nil {
			name, shell = egressName(n, i), qdisc.ShellTree(l.Namespace(n.Name), i.Name, i.Impair, i.Queue, mtuOf(i))
		}
		steps = append(steps, Step{Name: name, Shell: func() []string { return shell }, Do: func(d *deployer) error {
			h := d.handles[n.Name]
			link, err := nlsafe.LinkByName(h, i.Name)
			if err != nil {
				return fmt.Errorf("find %s:%s: %w", n.Name, i.Name, err)
			}
			if i.Impair == nil && i.Queue == nil {
				_, err = qdisc.Clear(h, link)
				return err
			}
			return d.inNS(n.Name, func(x *ns.NS) error { return qdisc.SetTree(x.Do, h, link, i.Impair, i.Queue) })
		}})
	}
	return steps
}

// netfilterChange replaces the node's nftables table where f's rules and
// n's differ (the same nft lines are the same rules).
func netfilterChange(l *spec.Lab, f, n *spec.Node) []Step {
	nsName := l.Namespace(n.Name)
	if slices.Equal(netfilter.Shell(nsName, l.Name, f), netfilter.Shell(nsName, l.Name, n)) {
		return nil
	}
	what := netfilter.Describe(n)
	if what == "" {
		what = "none"
	}
	return []Step{{
		Name:  fmt.Sprintf("replace the nftables table inet %s in %s (%s)", netfilter.Table, n.Name, what),
		Shell: func() []string { return netfilter.ShellReplace(nsName, l.Name, n) },
		Do: func(d *deployer) error {
			return d.inNS(n.Name, func(x *ns.NS) error { return netfilter.Replace(x.Fd(), l.Name, n) })
		},
	}}
}

// placementChange places the node's receive work as n says where f and n
// differ, or, where n places nothing, writes back the RPS and XPS masks
// saved before.
func placementChange(l *spec.Lab, f, n *spec.Node, saved map[string]string, requeued bool) []Step {
	if f.CPUs.String() == n.CPUs.String() && receiveMode(f) == receiveMode(n) && (!requeued || !n.Placed()) {
		return nil // the same placement, on the same queues
	}
	if n.Placed() {
		ifaces := placedInterfaces(n)
		return []Step{{
			Name:  fmt.Sprintf("place the receive work of %s on cpu %s (%s)", n.Name, n.CPUs, receiveMode(n)),
			Shell: func() []string { return shPlacement(l, n, ifaces) },
			Do: func(d *deployer) error {
				return d.inNS(n.Name, func(x *ns.NS) error {
					return x.DoSysfs(func() error {
						for _, ifc := range ifaces {
							if err := rps(ifc, n.CPUs, txQueues(n, ifc)); err != nil {
								return err
							}
						}
						return nil
					})
				})
			},
		}}
	}
	files := queueFiles(n.Name, saved)
	return []Step{{
		Name: fmt.Sprintf("give the receive work of %s back to the kernel (the RPS and XPS masks as they were)", n.Name),
		Shell: func() []string {
			var out []string
			for _, p := range placedInterfaces(f) {
				out = append(out, fmt.Sprintf("# ip netns exec %s: write back each of /sys/class/net/%s/queues/*/{rps,xps}_cpus as read before the variant", l.Namespace(n.Name), p))
			}
			return out
		},
		Do: func(d *deployer) error {
			return d.inNS(n.Name, func(x *ns.NS) error {
				return x.DoSysfs(func() error {
					for _, p := range files {
						if err := writeSysfs(p, saved[savedKey(n.Name, "sysfs", p)]); err != nil {
							return err
						}
					}
					return nil
				})
			})
		},
	}}
}

// queuesChange sets the queues each interface uses where f and n differ
// (a veth end takes any count up to what it was created with: see
// spec.Interface.MaxQueues). A queue taken away loses its RPS and XPS
// masks, and one given back has none: the caller places the node again.
func queuesChange(l *spec.Lab, f, n *spec.Node) []Step {
	var steps []Step
	for _, i := range n.Interfaces {
		q := usedQueues(i)
		if usedQueues(f.Interface(i.Name)) == q {
			continue
		}
		steps = append(steps, Step{
			Name:  fmt.Sprintf("use %d rx/tx queues on %s:%s", q, n.Name, i.Name),
			Shell: func() []string { return []string{shChannels(l.Namespace(n.Name), i.Name, q)} },
			Do: func(d *deployer) error {
				return d.inNS(n.Name, func(x *ns.NS) error { return x.Do(func() error { return ethtool.SetQueues(i.Name, q) }) })
			},
		})
	}
	return steps
}

// queueFiles lists the sysfs files of node's saved masks, in order.
func queueFiles(node string, saved map[string]string) []string {
	var out []string
	prefix := savedKey(node, "sysfs", "")
	for k := range saved {
		if p, ok := strings.CutPrefix(k, prefix); ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// capture reads what variant lab v would overwrite that the lab as
// deployed (l) does not set: each sysctl only v sets, and the RPS and XPS
// masks of a node only v places.
func (d *deployer) capture(l, v *spec.Lab) (map[string]string, error) {
	saved := map[string]string{}
	for _, n := range v.Nodes {
		base := l.Node(n.Name)
		var keys []spec.Sysctl
		for _, s := range n.Sysctls {
			if _, ok := sysctlOf(base, s.Key); !ok {
				keys = append(keys, s)
			}
		}
		if len(keys) > 0 {
			err := d.inNS(n.Name, func(x *ns.NS) error {
				return d.procWriter().DoIn(x, func() error {
					for _, s := range keys {
						b, err := os.ReadFile(s.ProcPath())
						if err != nil {
							return fmt.Errorf("read %s in %s: %w", s.Key, n.Name, err)
						}
						saved[savedKey(n.Name, "sysctl", s.Key)] = strings.TrimSpace(string(b))
					}
					return nil
				})
			})
			if err != nil {
				return nil, err
			}
		}
		if n.Placed() && !base.Placed() {
			if err := d.captureMasks(n, saved); err != nil {
				return nil, err
			}
		}
		if err := d.captureOffloads(base, n, saved); err != nil {
			return nil, err
		}
		if err := d.captureNAPI(base, n, saved); err != nil {
			return nil, err
		}
	}
	return saved, nil
}

// captureNAPI reads the NAPI files of each interface whose NAPI settings
// variant node n changes from the lab as deployed (base), from a thread
// that sees the node's sysfs.
func (d *deployer) captureNAPI(base, n *spec.Node, saved map[string]string) error {
	var ifcs []string
	for _, i := range n.Interfaces {
		if bi := base.Interface(i.Name); bi != nil && napiKey(bi.NAPI) != napiKey(i.NAPI) {
			ifcs = append(ifcs, i.Name)
		}
	}
	if len(ifcs) == 0 {
		return nil
	}
	return d.inNS(n.Name, func(x *ns.NS) error {
		return x.DoSysfs(func() error {
			for _, ifc := range ifcs {
				vals, err := inspect.ReadNAPI(ifc)
				if err != nil {
					return fmt.Errorf("%s:%s: %w", n.Name, ifc, err)
				}
				for name, v := range vals {
					saved[savedKey(n.Name, "napi", ifc+" "+name)] = v
				}
			}
			return nil
		})
	})
}

// captureOffloads reads each offload variant node n sets on an interface
// that the lab as deployed (base) does not set, from a thread in the node.
func (d *deployer) captureOffloads(base, n *spec.Node, saved map[string]string) error {
	var keys [][2]string // interface, offload
	for _, i := range n.Interfaces {
		var had map[string]bool
		if bi := base.Interface(i.Name); bi != nil {
			had = bi.Offloads
		}
		for _, k := range spec.OffloadNames {
			_, sets := i.Offloads[k]
			if _, ok := had[k]; sets && !ok {
				keys = append(keys, [2]string{i.Name, k})
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return d.inNS(n.Name, func(x *ns.NS) error {
		return x.Do(func() error {
			for _, k := range keys {
				on, err := ethtool.Feature(k[0], k[1])
				if err != nil {
					return fmt.Errorf("%s:%s: %w", n.Name, k[0], err)
				}
				w := "off"
				if on {
					w = "on"
				}
				saved[savedKey(n.Name, "offload", k[0]+" "+k[1])] = w
			}
			return nil
		})
	})
}

// captureMasks reads every rps_cpus and xps_cpus of node n's placed
// interfaces, from a thread that sees the node's sysfs.
func (d *deployer) captureMasks(n *spec.Node, saved map[string]string) error {
	return d.inNS(n.Name, func(x *ns.NS) error {
		return x.DoSysfs(func() error {
			for _, ifc := range placedInterfaces(n) {
				files, err := filepath.Glob(filepath.Join("/sys/class/net", ifc, "queues/*/[rx]ps_cpus"))
				if err != nil {
					return err
				}
				for _, p := range files {
					b, err := os.ReadFile(p)
					if errors.Is(err, fs.ErrNotExist) {
						continue // xps_cpus of a device with one tx queue: the kernel has no XPS for it
					}
					if err != nil {
						return fmt.Errorf("read %s in %s: %w", p, n.Name, err)
					}
					saved[savedKey(n.Name, "sysfs", p)] = strings.TrimSpace(string(b))
				}
			}
			return nil
		})
	})
}

// commandSteps run a variant's before: or after: command lines (kind), in
// their nodes, each to its end.
func commandSteps(l *spec.Lab, v *spec.Variant, kind string, lines map[string][]string) []Step {
	var steps []Step
	for _, node := range v.Nodes {
		n := l.Node(node)
		for i, c := range lines[node] {
			steps = append(steps, Step{
				Name: fmt.Sprintf("run in %s (variant %s, %s): %s", node, v.Name, kind, c),
				Shell: func() []string {
					return []string{fmt.Sprintf("ip netns exec %s sh -c %s", l.Namespace(node), ShellQuote(c))}
				},
				Do: func(d *deployer) error { return d.commandOnce(n, "variant-"+v.Name+"-"+kind, i, c) },
			})
		}
	}
	return steps
}
