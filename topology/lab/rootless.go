package lab

import (
	"fmt"

	"github.com/nslab/nslab/topology/rootless"
	"github.com/nslab/nslab/topology/spec"
)

// checkRootless lists what of the lab a rootless deploy cannot make (see
// package rootless): each needs the host's root, which the user namespace
// the lab lives in does not give. Nothing for a lab deployed by root.
func (m *Manager) checkRootless(l *spec.Lab) []string {
	if !m.Rootless {
		return nil
	}
	var problems []string
	refuse := func(what, instead string) {
		problems = append(problems, rootless.Refuse(what, instead).Error())
	}
	if len(l.SRIOV) > 0 {
		refuse("sriov: (a NIC's virtual functions)", "deploy it as root")
	}
	if len(l.Hosts) > 0 {
		refuse("hosts: (VXLAN to other hosts, from the host's own network namespace)", "deploy it as root, or as one host's lab without hosts:")
	}
	if len(l.Machine) > 0 {
		refuse(fmt.Sprintf("machine: (the machine-wide sysctl %s)", l.Machine[0].Key), "take machine: out, or deploy it as root")
	}
	for _, n := range l.Nodes {
		at := "nodes." + n.Name
		if n.Forwarding.FastPath != "" {
			refuse(at+".forwarding.fastpath: "+n.Forwarding.FastPath+" (a BPF program)", "take it out for a rootless lab")
		}
		if n.Limits != nil {
			refuse(at+".limits: (cgroups of the host's)", "take it out for a rootless lab")
		}
		if n.FRR != nil || n.BIRD != nil {
			refuse(at+": routing daemons (FRR and BIRD run as users of their own, and a rootless lab maps one user)", "deploy it as root")
		}
	}
	return problems
}
