package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nslab/nslab/internal/ethtool"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// Offloads an interface's offloads: turns on or off (SIOCETHTOOL, from a
// thread in its node). They live on the interface and go with it.

func offloadSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		for _, i := range n.Interfaces {
			if len(i.Offloads) == 0 {
				continue
			}
			steps = append(steps, Step{
				Name:  fmt.Sprintf("offloads %s:%s (%s)", n.Name, i.Name, spec.OffloadWords(i.Offloads)),
				Shell: func() []string { return []string{shOffloads(l.Namespace(n.Name), i.Name, i.Offloads)} },
				Do:    func(d *deployer) error { return d.setOffloads(n.Name, i.Name, i.Offloads) },
				Needs: []string{n.Name + ":" + i.Name},
			})
		}
	}
	return steps
}

// shOffloads is the ethtool line that sets offloads o of ifc in namespace
// nsName.
func shOffloads(nsName, ifc string, o map[string]bool) string {
	var words []string
	for _, k := range spec.OffloadNames {
		if on, ok := o[k]; ok {
			w := "off"
			if on {
				w = "on"
			}
			words = append(words, ethtool.Offloads[k].Word+" "+w)
		}
	}
	return fmt.Sprintf("ip netns exec %s ethtool -K %s %s", nsName, ifc, strings.Join(words, " "))
}

// setOffloads turns node's interface ifc's offloads o on or off, in the
// file's order, from a thread in the node.
func (d *deployer) setOffloads(node, ifc string, o map[string]bool) error {
	return d.inNS(node, func(x *ns.NS) error {
		return x.Do(func() error {
			for _, k := range spec.OffloadNames {
				if on, ok := o[k]; ok {
					if err := ethtool.SetFeature(ifc, k, on); err != nil {
						return fmt.Errorf("%s:%s: %w", node, ifc, err)
					}
				}
			}
			return nil
		})
	})
}

// NAPI settings an interface's napi: gives (the device's sysfs files,
// written from a thread that sees the node's sysfs). They live on the
// device and go with it.

func napiSettingSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		for _, i := range n.Interfaces {
			if i.NAPI == nil {
				continue
			}
			files := napiFiles(i.NAPI)
			if len(files) == 0 {
				continue // busy_poll alone: the sockets', set when they open
			}
			steps = append(steps, Step{
				Name:  fmt.Sprintf("NAPI %s:%s (%s)", n.Name, i.Name, i.NAPI.Words()),
				Shell: func() []string { return shNAPI(l.Namespace(n.Name), i.Name, files) },
				Do:    func(d *deployer) error { return d.writeNAPI(n.Name, i.Name, files) },
				Needs: []string{n.Name + ":" + i.Name},
			})
		}
	}
	return steps
}

// napiFile is one sysfs file of a device's NAPI settings and its value.
type napiFile struct{ name, value string }

// napiFiles are the files settings s writes, in order: threaded last
// (its kthreads start with the others set).
func napiFiles(s *spec.NAPI) []napiFile {
	var out []napiFile
	if s.GROFlushTimeout != nil {
		out = append(out, napiFile{"gro_flush_timeout", fmt.Sprint(s.GROFlushTimeout.Nanoseconds())})
	}
	if s.DeferHardIRQs != nil {
		out = append(out, napiFile{"napi_defer_hard_irqs", fmt.Sprint(*s.DeferHardIRQs)})
	}
	if s.Threaded != nil {
		v := "0"
		if *s.Threaded {
			v = "1"
		}
		out = append(out, napiFile{"threaded", v})
	}
	return out
}

// shNAPI is the shell of writeNAPI.
func shNAPI(nsName, ifc string, files []napiFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, fmt.Sprintf("ip netns exec %s sh -c 'echo %s > /sys/class/net/%s/%s'", nsName, f.value, ifc, f.name))
	}
	return out
}

// writeNAPI writes node's interface ifc's NAPI files, from a thread that
// sees the node's sysfs.
func (d *deployer) writeNAPI(node, ifc string, files []napiFile) error {
	return d.inNS(node, func(x *ns.NS) error {
		return x.DoSysfs(func() error {
			for _, f := range files {
				if err := os.WriteFile(filepath.Join("/sys/class/net", ifc, f.name), []byte(f.value), 0o644); err != nil {
					if f.name == "threaded" && errors.Is(err, unix.EOPNOTSUPP) {
						return fmt.Errorf("%s:%s: threaded NAPI needs NAPI: a veth has it with gro on (offloads: {gro: true}): %w", node, ifc, err)
					}
					return fmt.Errorf("%s:%s: %s: %w", node, ifc, f.name, err)
				}
			}
			return nil
		})
	})
}
