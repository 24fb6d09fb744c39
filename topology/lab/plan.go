package lab

import (
	"github.com/nslab/nslab/topology/lab/plan"
	"github.com/nslab/nslab/topology/spec"
)

// Step is one named kernel change of a deploy (see plan.Step), run by the
// deployer. Each kind of step lives in a file of its own (step_*.go) with
// its action and its shell lines side by side, so the script cannot drift
// from what deploy does.
type Step = plan.Step[*deployer]

// stepKind produces the steps of one kind for a lab. sysfs is where sysfs
// is mounted, which only the SR-IOV steps' shell lines name.
type stepKind func(l *spec.Lab, sysfs string) []Step

// kinds is the order of a deploy: namespaces, machine-wide sysctls, VFs, veth pairs, VXLAN
// interfaces of links to other hosts, interfaces made over those
// (macvlan, VLAN, bond, VRF), bridges, per-node settings, addresses, the
// wait for links to be up, CPU placement, impairments, offloads and NAPI settings, XDP fast paths, routes, policy
// routing rules, NAT and firewall, the nodes' views (their own mounts and
// hostname), their cgroups (limits:), one-shot commands, routing daemons, services.
var kinds = []stepKind{namespaceSteps, machineSteps, sriovSteps, vethSteps, tunnelSteps, madeSteps, bridgeSteps, nodeSettingSteps, addressSteps, waitSteps, placementSteps, impairSteps, offloadSteps, napiSettingSteps, fastPathSteps, routeSteps, ruleSteps, netfilterSteps, viewSteps, limitSteps, execSteps, startupSteps, routingSteps, serviceSteps}

// Plan returns the steps that deploy lab, in order.
func Plan(lab *spec.Lab) []Step { return planFor(lab, "") }

// planFor is Plan with the sysfs root the SR-IOV steps' shell lines name.
func planFor(lab *spec.Lab, sysfs string) []Step {
	var steps []Step
	for _, kind := range kinds {
		steps = append(steps, kind(lab, sysfs)...)
	}
	return steps
}
