package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"github.com/nslab/nslab/cmd/internal/agentargv"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nslab/nslab/pktgen/bench/events"
	"github.com/nslab/nslab/pktgen/bench/remote"
	"github.com/nslab/nslab/topology/fleet"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// fleetOptions is a verb run from here on every host of a lab that spans
// hosts (package fleet): the plan, how each host is reached, the verb's
// own arguments with the file's place marked, and the hosts it runs on.
type fleetOptions struct {
	Verb    string
	Args    []string // the verb's arguments, fleet.FileArg for the file
	Hosts   []string // where a verb about one node or one traffic run goes; nil for every host
	Plan    *fleet.Plan
	File    []byte
	Dialers map[string]fleet.Dialer
	Out     io.Writer
	// The watching verbs': top and metrics --once, metrics' and web's
	// address, web's interval.
	Once     bool
	Listen   string
	Interval time.Duration
	Err      io.Writer
	// AsDeployed: destroy --as-deployed, which removes each host's lab of
	// the name though it was applied from another file since.
	AsDeployed bool
	// Strict: deploy --strict, on every host.
	Strict bool
}

// viaAgents lets verb run on every host of a lab that spans hosts from
// this machine, when its file gives each host's ssh: (or --inventory
// does) and no --host says this machine is one of them, or, with
// --kubernetes, on the lab deployed as a Lab resource.
func viaAgents(cmd *cli.Command) *cli.Command {
	local := cmd.Action
	usage := "on the lab deployed as a Lab on the Kubernetes cluster kubectl reaches ($KUBECONFIG or ~/.kube/config): each host's part run by the nslab agent's pod on the host's node (pods/exec)"
	switch cmd.Name {
	case "deploy", "destroy":
		usage = "as a Lab resource on the Kubernetes cluster kubectl reaches ($KUBECONFIG or ~/.kube/config), each host's share built by the nslab agent on its node (the node of the host's name, or the one its node_selector: picks); wait for them"
	case "apply":
		usage = "change the lab's Lab resource on the Kubernetes cluster kubectl reaches to this file; wait for each host's agent to apply its share"
	}
	cmd.Flags = append(cmd.Flags, &cli.BoolFlag{Name: "kubernetes", Usage: usage})
	cmd.Action = func(c *cli.Context) error {
		if c.Bool("kubernetes") && (cmd.Name == "deploy" || cmd.Name == "destroy" || cmd.Name == "apply") {
			return runKube(c)
		}
		o, err := readFleet(c)
		switch {
		case err != nil:
			return err
		case o == nil:
			return local(c)
		}
		return runFleet(c.Context, o)
	}
	return cmd
}

// readFleet reads a verb run on every host: nil when the verb is to run
// here (--host given, no file, a lab on one machine, hosts without ssh:
// and no --kubernetes).
func readFleet(c *cli.Context) (*fleetOptions, error) {
	path := fileArg(c)
	if c.Bool("kubernetes") {
		data, shells, err := kubeShells(c, path)
		if err != nil {
			return nil, err
		}
		l, err := spec.Parse(path, data)
		if err != nil {
			return nil, fmt.Errorf("the file of the lab's Lab resource: %w", err)
		}
		return fleetOf(c, path, data, l, shells)
	}
	data, err := os.ReadFile(path)
	if hostOf(c) != "" || path == "" || err != nil {
		return nil, nil
	}
	l, err := spec.Parse(path, data)
	if err != nil || !l.Spans() {
		return nil, nil
	}
	targets, err := sshTargets(c, l)
	if err != nil || targets == nil {
		return nil, err
	}
	shells := map[string]fleet.Shell{}
	for h, t := range targets {
		shells[h] = fleet.SSH{Target: t, Config: globalString(c, "ssh-config")}
	}
	return fleetOf(c, path, data, l, shells)
}

// fleetOf is the verb run on every host of the lab l (read from data, at
// path), each host reached through its shell.
func fleetOf(c *cli.Context, path string, data []byte, l *spec.Lab, shells map[string]fleet.Shell) (*fleetOptions, error) {
	plan, err := fleet.NewPlan(data, l)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find nslab's executable, to run it on the hosts: %w", err)
	}
	id, err := fleet.BinaryID(exe)
	if err != nil {
		return nil, err
	}
	out := c.App.Writer
	switch c.Command.Name {
	case "top", "metrics", "web": // a live view, the exposition format, an address: never folded
	default:
		out = screen(c)
	}
	o := &fleetOptions{Verb: c.Command.Name, Plan: plan, File: data, Dialers: map[string]fleet.Dialer{}, Out: out, Err: c.App.ErrWriter,
		AsDeployed: c.Command.Name == "destroy" && c.Bool(asDeployedName), Strict: c.Command.Name == "deploy" && c.Bool("strict")}
	if err := readWatching(c, o); err != nil {
		return nil, err
	}
	for h, sh := range shells {
		_, fixed := sh.(fleet.KubeExec) // an agent pod runs its image's nslab
		o.Dialers[h] = fleet.Remote{Shell: sh, Exe: exe, ID: id, Fixed: fixed, Version: version}
	}
	o.Args = verbArgs(c, path)
	o.Hosts, err = fleetHosts(c, l)
	return o, err
}

// kubeShells reads the Lab of the lab in path from the cluster: its file
// as deployed (with the underlays placement wrote in: the plan the agents
// hold), and each host's agent reached by pods/exec on the host's node.
func kubeShells(c *cli.Context, path string) ([]byte, map[string]fleet.Shell, error) {
	if path == "" {
		return nil, nil, cli.Exit(c.Command.Name+" --kubernetes: give the lab's FILE", 2)
	}
	helper, err := helperPath(kubeHelperName)
	if err != nil {
		return nil, nil, err
	}
	var errOut bytes.Buffer
	cmd := exec.CommandContext(c.Context, helper, "lab", path)
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("%s", cmp.Or(strings.TrimPrefix(strings.TrimSpace(errOut.String()), "nslab: "), err.Error()))
	}
	var lab struct {
		File  string
		Nodes map[string]string
	}
	if err := json.Unmarshal(out, &lab); err != nil {
		return nil, nil, fmt.Errorf("%s lab: %w", kubeHelperName, err)
	}
	shells := map[string]fleet.Shell{}
	for h, node := range lab.Nodes {
		shells[h] = fleet.KubeExec{Helper: helper, Node: node}
	}
	return []byte(lab.File), shells, nil
}

// readWatching reads the options of the verbs that watch a lab: top's
// and metrics' --once, metrics' and web's --listen, web's --interval.
func readWatching(c *cli.Context, o *fleetOptions) error {
	if o.Verb == "top" || o.Verb == "metrics" {
		o.Once, o.Listen = c.Bool("once"), c.String("listen")
	}
	if o.Verb == "web" {
		o.Listen, o.Interval = c.String("listen"), c.Duration("interval")
		if o.Interval < 100*time.Millisecond {
			return cli.Exit("--interval: at least 100ms", 2)
		}
	}
	if o.Verb == "metrics" && !o.Once || o.Verb == "web" {
		return checkListen(o.Listen, o.Err)
	}
	return nil
}

// fileArg is the lab's file a verb was given: --topo, or its first
// operand.
func fileArg(c *cli.Context) string {
	if path := c.String("topo"); path != "" {
		return path
	}
	return c.Args().First()
}

// sshTargets is how each host is reached: its ssh:, or the inventory's
// line for it. Nil when no host has either (one command per host).
func sshTargets(c *cli.Context, l *spec.Lab) (map[string]string, error) {
	inv := map[string]string{}
	if f := globalString(c, "inventory"); f != "" {
		var err error
		if inv, err = readInventory(f); err != nil {
			return nil, err
		}
	}
	out, missing := map[string]string{}, []string{}
	for _, h := range l.Hosts {
		if t := cmp.Or(inv[h.Name], h.SSH); t != "" {
			out[h.Name] = t
		} else {
			missing = append(missing, h.Name)
		}
	}
	switch {
	case len(out) == 0:
		return nil, nil
	case len(missing) > 0:
		return nil, cli.Exit(fmt.Sprintf("lab %s: no way to reach host %s from here: give it ssh: [user@]host under hosts:, or a line in --inventory (or, for a lab deployed on Kubernetes, --kubernetes; or run nslab --host NAME on each host)", l.Name, strings.Join(missing, ", ")), 2)
	}
	return out, nil
}

// globalString is a global option's value, given before the verb or after.
func globalString(c *cli.Context, name string) string {
	for _, x := range c.Lineage() {
		if x.IsSet(name) {
			return x.String(name)
		}
	}
	return ""
}

// readInventory reads an Ansible inventory in INI form: a line per host,
// its name first, then ansible_host=, ansible_user= and ansible_port=
// (the name is the address when ansible_host is not given). Groups,
// [sections] and other variables are passed over.
func readInventory(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--inventory: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") || strings.HasPrefix(fields[0], ";") || strings.HasPrefix(fields[0], "[") {
			continue
		}
		vars := map[string]string{"ansible_host": fields[0]}
		for _, kv := range fields[1:] {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = strings.Trim(v, `"'`)
			} else {
				return nil, fmt.Errorf("%s:%d: %q is not NAME=VALUE: an inventory line is a host's name and its variables (ansible_host=192.0.2.1 ansible_user=root)", path, line, kv)
			}
		}
		t := vars["ansible_host"]
		if u := vars["ansible_user"]; u != "" {
			t = u + "@" + t
		}
		if p := vars["ansible_port"]; p != "" {
			t = "ssh://" + t + ":" + p
		}
		out[fields[0]] = t
	}
	return out, sc.Err()
}

// verbArgs are the verb's own arguments as given, the file marked and
// --kubernetes left out.
func verbArgs(c *cli.Context, path string) []string {
	raw, _ := c.App.Metadata["args"].([]string)
	at := slices.Index(raw, c.Command.Name)
	var out []string
	for _, a := range raw[at+1:] {
		switch {
		case a == "--kubernetes" || a == "-kubernetes" || strings.HasPrefix(a, "--kubernetes="):
			continue // how the coordinator reaches the hosts, not the verb's
		case a == path:
			a = fleet.FileArg
		case strings.HasSuffix(a, "="+path) && strings.HasPrefix(a, "-"):
			a = strings.TrimSuffix(a, path) + fleet.FileArg
		}
		out = append(out, a)
	}
	return out
}

// fleetHosts is where a verb about one node (path, from its source;
// impair, link and node, on it) or one traffic run (bench, from its
// sender's host) runs; nil for every host.
func fleetHosts(c *cli.Context, l *spec.Lab) ([]string, error) {
	var node string
	ops := c.Args().Slice()
	if c.String("topo") == "" && len(ops) > 0 {
		ops = ops[1:]
	}
	switch c.Command.Name {
	case "path":
		if len(ops) > 0 {
			node, _, _ = strings.Cut(ops[0], ":")
		}
	case "bench":
		return benchHost(c, l)
	case "impair": // NODE:IF
		if len(ops) > 0 {
			node, _, _ = strings.Cut(ops[0], ":")
		}
	case "link", "node": // down|up NODE:IF, stop|start NODE
		if len(ops) > 1 {
			node, _, _ = strings.Cut(ops[1], ":")
		}
	default:
		return nil, nil
	}
	if n := l.Node(node); n != nil {
		return []string{n.Host}, nil
	}
	return nil, cli.Exit(fmt.Sprintf("lab %s: %s names no node of the lab, so no host to run it on", l.Name, c.Command.Name), 2)
}

// benchHost is the host a bench of lab l across hosts runs on: its
// sender's (--from NODE:IF, or the node every run the --traffic names
// sends from: a run or a group of runs; without --traffic, the file's
// first run). Runs that send from several hosts are refused: the bench
// runs on one host and reads the others' hops through their agents.
func benchHost(c *cli.Context, l *spec.Lab) ([]string, error) {
	if from := c.String("from"); from != "" {
		node, _, _ := strings.Cut(from, ":")
		if n := l.Node(node); n != nil {
			return []string{n.Host}, nil
		}
		return nil, cli.Exit(fmt.Sprintf("lab %s: --from %s names no node of the lab, so no host to send from", l.Name, from), 2)
	}
	var runs []*spec.Traffic
	for _, name := range c.StringSlice("traffic") {
		rs := l.Runs(name)
		if len(rs) == 0 {
			return nil, cli.Exit(fmt.Sprintf("lab %s: --traffic %s names no run or group of runs of the lab", l.Name, name), 2)
		}
		runs = append(runs, rs...)
	}
	if len(runs) == 0 && len(l.Traffic) > 0 {
		runs = l.Traffic[:1]
	}
	hosts := map[string][]string{} // host -> the runs that send from it
	for _, t := range runs {
		if n := l.Node(t.From.Node); n != nil {
			hosts[n.Host] = append(hosts[n.Host], t.Name)
		}
	}
	switch len(hosts) {
	case 0:
		return nil, cli.Exit(fmt.Sprintf("lab %s: bench has no run to send: give --traffic RUN, or --from NODE:IF and --to", l.Name), 2)
	case 1:
		return slices.Collect(maps.Keys(hosts)), nil
	}
	var parts []string
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		parts = append(parts, fmt.Sprintf("%s from host %s", strings.Join(hosts[h], ", "), h))
	}
	return nil, cli.Exit(fmt.Sprintf("lab %s: the runs send from several hosts (%s): a bench across hosts runs on its senders' host; bench each host's runs with their own --traffic", l.Name, strings.Join(parts, "; ")), 2)
}

// runFleet runs the verb on every host (or the one its node is on) from
// here, each host's part at once, and prints each host's output under
// its name.
func runFleet(ctx context.Context, o *fleetOptions) error {
	start := time.Now()
	co, err := fleet.Open(ctx, o.Plan, o.File, o.Dialers, nil)
	if err != nil {
		return fmt.Errorf("lab %s: %w", o.Plan.Lab, err)
	}
	defer co.Close()
	switch o.Verb {
	case "top":
		return fleetTop(ctx, co, o)
	case "metrics":
		return fleetMetrics(ctx, co, o)
	case "web":
		return fleetWeb(ctx, co, o)
	}
	var res []fleet.Result
	switch o.Verb {
	case "deploy":
		co.Strict = o.Strict
		res, err = co.Deploy(ctx)
	case "destroy":
		co.AsDeployed = o.AsDeployed
		res, err = co.Destroy(ctx)
	default:
		hosts := o.Hosts
		if hosts == nil {
			hosts = o.Plan.Hosts()
		}
		args := append([]string{o.Verb}, o.Args...)
		if o.Verb == "bench" { // on its sender's host, reading the others' hops
			args = append([]string{o.Verb, fleet.RemoteArg}, o.Args...)
		}
		res, err = co.RunOn(ctx, hosts, args...)
	}
	if o.Verb == "deploy" && err != nil {
		res = takenBack(res, err)
	}
	printResults(o.Out, res, len(o.Hosts) == 1)
	if err != nil {
		return fmt.Errorf("lab %s: %w", o.Plan.Lab, err)
	}
	if o.Verb == "destroy" && len(res) == 0 {
		fmt.Fprintf(o.Out, "lab %s is deployed on none of hosts %s: nothing to destroy\n", o.Plan.Lab, strings.Join(o.Plan.Hosts(), ", "))
		return nil
	}
	if o.Verb == "deploy" || o.Verb == "destroy" {
		fmt.Fprintf(o.Out, "%sed lab %s on hosts %s from here in %s; %s\n", o.Verb, o.Plan.Lab, strings.Join(o.Plan.Hosts(), ", "),
			time.Since(start).Round(time.Millisecond), clocks(co))
	}
	if f := fleet.Failed(res); len(f) > 0 {
		return cli.Exit(fmt.Sprintf("lab %s: %s failed on host %s", o.Plan.Lab, o.Verb, f[0].Host), max(f[0].Code, 1))
	}
	return nil
}

// takenBack is a failed deploy's results as they stand after it: a host
// whose share was made and then taken back says so instead of its
// deploy's "deployed lab" line, which is no longer true; a host err names
// (its deploy failed, it was lost, or taking its share back failed) keeps
// its own words.
func takenBack(res []fleet.Result, err error) []fleet.Result {
	out := slices.Clone(res)
	for i, r := range out {
		if r.Code == 0 && !fleet.Names(err, r.Host) {
			out[i].Stdout, out[i].Stderr = "its share was made, then taken back as the deploy failed\n", ""
		}
	}
	return out
}

// printResults prints each host's output: under a line naming the host,
// or each line after the host's name for one-line outputs.
func printResults(w io.Writer, res []fleet.Result, one bool) {
	for _, r := range res {
		out := strings.TrimRight(r.Stdout+r.Stderr, "\n")
		switch {
		case out == "":
		case one:
			fmt.Fprintf(w, "on host %s:\n%s\n", r.Host, out)
		case !strings.Contains(out, "\n"):
			fmt.Fprintf(w, "host %s: %s\n", r.Host, out)
		default:
			fmt.Fprintf(w, "host %s:\n%s\n\n", r.Host, out)
		}
	}
}

// clocks says each host's clock against this one's, as the hello
// measured it.
func clocks(co *fleet.Coordinator) string {
	var parts []string
	for _, h := range co.Plan.Hosts() {
		o := co.Offsets[h]
		parts = append(parts, fmt.Sprintf("%s %+.3fms ±%.3fms", h, float64(o.Offset.Microseconds())/1000, float64(o.RTT.Microseconds())/2000))
	}
	return "hosts' clocks against this one's: " + strings.Join(parts, ", ")
}

// agentCommand is nslab agent: the side of a lab that spans hosts that
// runs on each host, started by the coordinator over ssh.
func agentCommand() *cli.Command {
	return &cli.Command{
		Name:  "agent",
		Usage: "serve a coordinator on standard input and output: build and read this host's share of a lab that spans hosts (nslab starts it over ssh; it opens no listener)",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "kubernetes", Usage: "serve the Kubernetes cluster's Lab resources instead (the agent's DaemonSet, deploy/kubernetes/): build this node's share of each"},
			&cli.StringFlag{Name: "node", EnvVars: []string{"NODE_NAME"}, Usage: "with --kubernetes: this Kubernetes node's `NAME`: the lab's host placed on it is built here"},
			&cli.StringFlag{Name: "kubeconfig", Usage: "with --kubernetes: the kubeconfig `FILE` (default: the pod's ServiceAccount, or as kubectl finds it)"},
			&cli.DurationFlag{Name: "resync", Value: 30 * time.Second, Usage: "with --kubernetes: check every share on this node against its Lab this often (drift shows in the Lab's status within one)"},
			&cli.StringFlag{Name: "ready", Usage: "with --kubernetes: write `FILE` once the agent watches the Labs (the pod's readiness probe)"},
		},
		Action: func(c *cli.Context) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			var global []string
			for _, name := range []string{"state-dir", "netns-dir"} {
				if v := c.String(name); v != "" {
					global = append(global, "--"+name, v)
				}
			}
			if c.Bool("kubernetes") {
				if c.String("node") == "" {
					return cli.Exit("agent --kubernetes: give --node NAME (or $NODE_NAME), this Kubernetes node's name", 2)
				}
				args := []string{"agent", "-node", c.String("node"), "-nslab", exe, "-resync", c.Duration("resync").String()}
				if c.String("ready") != "" {
					args = append(args, "-ready", c.String("ready"))
				}
				args = append(args, "--")
				return execKube(c.String("kubeconfig"), append(args, global...)...)
			}
			// A coordinator gone closes the agent's standard output: a
			// write there must fail and let the agent undo and clean up,
			// not kill it (SIGPIPE on fd 1 ends a Go program).
			signal.Ignore(syscall.SIGPIPE)
			// sshd may hang up on the agent when the connection drops
			// before the end of its input arrives: end as at that end,
			// removing what the agent kept, not at once.
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGHUP)
			defer stop()
			a := &fleet.Agent{Version: version, Exe: exe, Argv: agentArgv(global), In: os.Stdin, Out: os.Stdout}
			return a.Serve(ctx)
		},
	}
}

// otherHostsFlag is bench's hidden flag, given by an agent: read the
// path's hops on other hosts through the agent (fleet.AskFD and
// fleet.AnswerFD).
const otherHostsFlag = agentargv.OtherHostsFlag

// hopsCommand is nslab hops: what an agent runs on its host for a bench
// run on another host, reading this host's hops of its path (package
// remote's protocol on standard input and output).
func hopsCommand() *cli.Command {
	return &cli.Command{
		Name:      "hops",
		Usage:     "read this host's hops of a bench run on another host, for the agent (one JSON request per line on standard input)",
		ArgsUsage: "FILE",
		Hidden:    true,
		Flags:     []cli.Flag{hostFlag()},
		Action: func(c *cli.Context) error {
			l, err := readPart(c)
			if err != nil {
				return err
			}
			r, err := manager(c).Open(l)
			if err != nil {
				return err
			}
			defer r.Close()
			if err := r.Learn(); err != nil {
				return err
			}
			return remote.Serve(r.Opened, events.Side(c.Context, r), os.Stdin, os.Stdout)
		},
	}
}

// agentArgv is the command line an agent runs a verb of its host's share
// with: the global options it was given, --host, and the request's
// arguments with the protocol's stand-ins spelled as flags (agentargv,
// which nslab-kube's agent spells them with too).
func agentArgv(global []string) func(host, labName string, args []string) []string {
	return func(host, labName string, args []string) []string {
		return agentargv.Spell(global, host, labName, args)
	}
}

// kubeHelperName is the program that talks to Kubernetes (cmd/nslab-kube):
// client-go would make every nslab command larger and slower to start.
const kubeHelperName = "nslab-kube"

// runKube deploys, applies or destroys the lab of the file as a Lab
// resource: the helper computes its plan and waits for the agents. An
// apply is a deploy of the changed file: the Lab's new spec, which each
// agent applies over its share.
func runKube(c *cli.Context) error {
	path := fileArg(c)
	if path == "" {
		return cli.Exit(c.Command.Name+" --kubernetes: give the lab's FILE", 2)
	}
	verb := c.Command.Name
	if verb == "apply" {
		verb = "deploy"
	}
	// The helper folds what it prints as nslab would (--width).
	if err := os.Setenv("NSLAB_WIDTH", strconv.Itoa(c.Int(widthFlag))); err != nil {
		return err
	}
	return execKube("", verb, path)
}

// execKube becomes the helper with args (the same process: Ctrl-C and
// SIGTERM reach it, and a deploy interrupted takes its shares back).
func execKube(kubeconfig string, args ...string) error {
	if kubeconfig != "" {
		args = append([]string{"-kubeconfig", kubeconfig}, args...)
	}
	return execProgram(kubeHelperName, args...)
}
