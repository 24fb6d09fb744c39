package lab

import (
	"github.com/nslab/nslab/topology/spec"
)

// Step is one named kernel change of a deploy. The plan is the ordered list
// of steps; it can be printed (nslab deploy --dry-run) before anything runs.
// Each kind of step lives in a file of its own (step_*.go) with its action
// and its shell lines side by side, so the script cannot drift from what
// deploy does.
type Step struct {
	Name  string
	shell func() []string // the same change as iproute2/sysctl commands (see DeployScript)
	do    func(d *deployer) error
	// What apply compares and takes back (see apply.go): key names the
	// change (default: Name and the shell lines); makes are the objects
	// it creates and needs those it works on: "N" node N's namespace,
	// "N:IF" an interface, "N:*" every interface of N, "N/view" its
	// view, "N/cgroup" its cgroup, "N/procs" its processes. undo takes
	// the change back on a running lab, treating what is gone already as
	// taken back; with undo nil, only rebuilding the nodes of needs does
	// (unless noUndo: nothing to take back).
	key          string
	makes, needs []string
	undo         func(d *deployer) error
	noUndo       bool
	// reload, where a program can take a new configuration without a
	// restart (a routing daemon): apply pairs the deployed lab's step
	// and the file's that make the same object (makes) and reloads.
	reload func(d *deployer) error
	// ahead starts the step's work in the background once every
	// namespace of the run exists (see deployer.startAhead); its do then
	// waits for it.
	ahead func(d *deployer)
}

// Shell returns the step as iproute2/sysctl commands (see DeployScript).
func (s Step) Shell() []string { return s.shell() }

// stepKind produces the steps of one kind for a lab. sysfs is where sysfs
// is mounted, which only the SR-IOV steps' shell lines name.
type stepKind func(l *spec.Lab, sysfs string) []Step

// kinds is the order of a deploy: namespaces, VFs, veth pairs, VXLAN
// interfaces of links to other hosts, interfaces made over those
// (macvlan, VLAN, bond, VRF), bridges, per-node settings, addresses, the
// wait for links to be up, CPU placement, impairments, routes, policy
// routing rules, NAT and firewall, the nodes' views (their own mounts and
// hostname), their cgroups (limits:), one-shot commands, routing daemons, services.
var kinds = []stepKind{namespaceSteps, sriovSteps, vethSteps, tunnelSteps, madeSteps, bridgeSteps, nodeSettingSteps, addressSteps, waitSteps, placementSteps, impairSteps, routeSteps, ruleSteps, netfilterSteps, viewSteps, limitSteps, execSteps, routingSteps, serviceSteps}

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
