// Command nslab builds network labs of namespaces from a YAML file and
// measures packet forwarding in them. Each verb lives in its own file and
// only wires flags to the topology packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/nslab/nslab/internal/fold"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/nslab/nslab/internal/caps"
	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/topology/fleet"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/rootless"
	"github.com/nslab/nslab/topology/spec"
	"github.com/nslab/nslab/topology/walk"
	"github.com/urfave/cli/v2"
)

// version is set at build time (-ldflags -X main.version=...).
var version = "dev"

// init gives a build without the version stamped in (go install) the
// module's version, or the commit it was built from.
func init() {
	if version != "dev" {
		return
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		version = v
		return
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 7 {
			version = "dev-" + s.Value[:7]
		}
	}
}

// exitInterrupted is the exit code after Ctrl-C, as shells use (128+SIGINT).
const exitInterrupted = 130

func main() {
	if rootless.Holding(os.LookupEnv) {
		os.Exit(hold())
	}
	tuneGC()
	os.Exit(run(os.Args))
}

// tuneGC lets the heap grow to five times what is live before a
// collection (GOGC=400), within 1 GiB, unless GOGC or GOMEMLIMIT say
// otherwise. nslab is a short process whose garbage is mostly the lab's
// parsed file and plan: at the default, the collector took both of this
// machine's CPUs from a deploy of 1,000 nodes for a fifth of its time
// (1.52-1.78 s against 1.25-1.33 s at 400, three runs each).
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(1 << 30)
	}
}

func run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := newApp(commands()...)
	if code, ok := runRootless(args, app); ok {
		return code
	}
	args = operandsLast(args, app)
	app.Metadata = map[string]any{"args": args} // as given, for a verb run on other hosts
	err := app.RunContext(ctx, args)
	if err == nil {
		return 0
	}
	printError(err)
	var ec cli.ExitCoder
	switch {
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return exitInterrupted
	case errors.As(err, &ec):
		return ec.ExitCode()
	case errors.Is(err, lab.ErrNotOwner):
		return fleet.ExitNotOwner // a lab of another owner, left alone (--owner, which the Kubernetes agents give)
	}
	return 1
}

// operandsLast moves the options of a verb that takes its operands first
// (and of import's subcommands) before the operands, where the CLI
// library wants them.
func operandsLast(args []string, app *cli.App) []string {
	if at := commandAt(args, app); at > 0 && operandsFirst[args[at]] {
		for _, cmd := range app.Commands {
			if cmd.Name == args[at] {
				args = flagsFirst(args, at, cmd)
			}
		}
	} else if at > 0 && args[at] == "import" && at+1 < len(args) {
		// nslab import containerlab FILE --out X: its subcommand's options
		// may come after the operand too.
		for _, cmd := range app.Commands {
			for _, sub := range cmd.Subcommands {
				if cmd.Name == "import" && sub.Name == args[at+1] {
					args = flagsFirst(args, at+1, sub)
				}
			}
		}
	}
	return args
}

// printError says what went wrong on stderr.
func printError(err error) {
	var ps spec.Problems
	if errors.As(err, &ps) {
		fmt.Fprintf(os.Stderr, "nslab: the topology file has %d problem(s); nothing was changed:\n%v\n", len(ps), ps)
	} else if err.Error() != "" { // a helper program has said why already
		fmt.Fprintln(os.Stderr, "nslab:", flagWords(err))
	}
	if rootlessWhyNot != nil && errors.Is(err, lab.ErrNotPrivileged) {
		fmt.Fprintln(os.Stderr, "nslab:", rootlessWhyNot)
	}
}

// commands are nslab's verbs, each with its real run function.
func commands() []*cli.Command {
	return []*cli.Command{viaAgents(deployCommand(nil)), viaAgents(applyCommand(nil)), viaAgents(destroyCommand(nil)), viaAgents(inspectCommand(nil)), execCommand(nil), validateCommand(nil),
		viaAgents(benchCommand(nil)), compareCommand(nil), graphCommand(nil), viaAgents(pathCommand(nil)), viaAgents(checkCommand(nil)), testCommand(nil), viaAgents(impairCommand(nil)), viaAgents(linkCommand(nil)), viaAgents(nodeCommand(nil)), captureCommand(nil),
		viaAgents(topCommand(nil)), viaAgents(webCommand(nil)), viaAgents(metricsCommand(nil)), generateCommand(nil), exportCommand(nil), importCommand(nil), schemaCommand(nil), completionCommand(nil), gendocsCommand(nil), completeCommand(nil), agentCommand(), hopsCommand()}
}

// newApp is nslab with its global options and these verbs (tests build
// it with one verb whose run function they give).
func newApp(commands ...*cli.Command) *cli.App {
	return &cli.App{
		Name:    "nslab",
		Usage:   "build network labs of namespaces and measure forwarding in them",
		Version: version,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "netns-dir", Value: "", Usage: "directory of named namespaces (default /run/netns)", Hidden: true, EnvVars: []string{"NSLAB_NETNS_DIR"}},
			&cli.StringFlag{Name: "state-dir", Value: "", Usage: "`DIR` of lab state files and service logs (default /run/nslab): two nslab runs with their own state dirs keep their labs apart", EnvVars: []string{"NSLAB_STATE_DIR"}},
			&cli.StringFlag{Name: "host", Value: "", Usage: "the `HOST` this machine is, for a lab that spans hosts (its hosts: section): deploy, check, path and bench work on that host's part", EnvVars: []string{"NSLAB_HOST"}},
			&cli.BoolFlag{Name: "rootless", Usage: "run the lab verbs in the user's own namespaces, without root (the default for a user other than root): the labs live in a user namespace of the user's; kernel pktgen, BPF, SR-IOV, tunnels to other hosts and the machine's settings are refused"},
			&cli.StringFlag{Name: "ssh-config", Usage: "ssh's configuration `FILE` (ssh -F) for reaching the hosts of a lab that spans hosts, instead of ~/.ssh/config"},
			&cli.StringFlag{Name: "inventory", Usage: "an Ansible inventory `FILE` (INI) naming how to reach each host of a lab that spans hosts (ansible_host, ansible_user, ansible_port), instead of their ssh:"},
			&cli.StringFlag{Name: "sysfs", Value: "", Usage: "where sysfs is, for SR-IOV (default /sys)", Hidden: true, EnvVars: []string{"NSLAB_SYSFS"}},
			&cli.IntFlag{Name: widthFlag, Value: fold.Width, Usage: "fold the lines of a report for a person (bench, check, path, test, compare, deploy...) at `N` characters; 0: never (JSON, CSV, --details and scripts are never folded)", EnvVars: []string{"NSLAB_WIDTH"}},
			prefixFlag(),
			// The agent's DaemonSet sets it: its pod's /run/nslab is a
			// volume of the node's without propagation, and the views
			// held there must outlive the pod (see ns.MountOutsideContainer).
			&cli.BoolFlag{Name: "mounts-outside-container", Hidden: true, EnvVars: []string{"NSLAB_MOUNTS_OUTSIDE_CONTAINER"},
				Usage: "hold the labs' views in the mount namespace outside this container (the node's), so that they outlive it"},
		},
		Before: func(c *cli.Context) error {
			if !c.Bool("mounts-outside-container") {
				return nil
			}
			if err := ns.MountOutsideContainer(); err != nil {
				return err
			}
			// The copy of the node's views this container got when it
			// started is never used (views are opened in the node's
			// mount namespace): detached, it keeps no removed lab's
			// namespaces alive.
			dir := c.String("state-dir")
			if dir == "" {
				dir = lab.DefaultStateDir
			}
			return ns.DetachHere(filepath.Join(dir, "views"))
		},
		Commands:       withUsageErrors(withHelp(commands)),
		Action:         unknownVerb,
		Suggest:        true, // nslab help VERB with a typo: the nearest verb
		OnUsageError:   usageError,
		After:          flushScreens,
		ExitErrHandler: func(*cli.Context, error) {}, // run() prints and maps errors
	}
}

// flagWords is err's message in this command line's words: the request
// field a library names (bench.FieldError: "rate: ...") named as the flag
// the user gave it ("--rate: ..."), and a lab the library says to destroy
// (LabToDestroy) followed by the command that does it.
func flagWords(err error) string {
	msg := err.Error()
	var fe *bench.FieldError
	if errors.As(err, &fe) {
		msg = strings.Replace(msg, fe.Error(), "--"+fe.Error(), 1)
	}
	var td interface{ LabToDestroy() string }
	if errors.As(err, &td) && td.LabToDestroy() != "" {
		msg += fmt.Sprintf(" (nslab destroy --name %s)", td.LabToDestroy())
	}
	return msg
}

// operandsFirst are the verbs whose operands may come before their
// options, as tc and ip are written (nslab impair ns2:eth1 --delay 50ms).
var operandsFirst = map[string]bool{"impair": true, "link": true, "node": true, "capture": true, "generate": true, "export": true, "compare": true,
	"top": true, "web": true, "metrics": true}

// labVerbs are the verbs that work on deployed labs: run by a user other
// than root, or with --rootless, they run inside the user's rootless labs.
var labVerbs = map[string]bool{"deploy": true, "apply": true, "destroy": true, "inspect": true, "exec": true, "bench": true,
	"path": true, "check": true, "test": true, "impair": true, "link": true, "node": true, "capture": true, "top": true, "web": true, "metrics": true}

// runRootless runs a lab verb in the user's rootless labs (package
// rootless) when args are one that runs rootless, and returns its exit
// code and true; false when this process is to run args itself.
func runRootless(args []string, app *cli.App) (int, bool) {
	at := commandAt(args, app)
	if at <= 0 || !labVerbs[args[at]] || capabilities().Rootless || !rootless.Wanted(rootlessAsked(args[:at])) {
		return 0, false
	}
	code, err := enterRootless(args[:at], args)
	if errors.Is(err, rootless.ErrUnavailable) {
		rootlessWhyNot = err // the verb runs here, and says it needs root
		return 0, false
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nslab:", err)
		return 1, true
	}
	return code, true
}

// enterRootless runs args inside the user's holder. Their namespaces and
// state are the holder's: a private --state-dir or --netns-dir, which
// would put them elsewhere, is refused before anything starts.
func enterRootless(global, args []string) (int, error) {
	for _, name := range []string{"state-dir", "netns-dir"} {
		env := "NSLAB_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if os.Getenv(env) != "" || slices.ContainsFunc(global, func(a string) bool { return strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-") == name }) {
			return 0, fmt.Errorf("--%s (or %s) is for labs deployed by root: a rootless lab keeps its namespaces and state in the user's own (under $XDG_RUNTIME_DIR/nslab); leave it out, or run nslab as root", name, env)
		}
	}
	return rootless.Run(args, servesHost[args[len(global)]], [3]*os.File{os.Stdin, os.Stdout, os.Stderr})
}

// rootlessWhyNot is why a user other than root has no rootless labs on
// this machine, said after the verb's "needs root".
var rootlessWhyNot error

// hold is the life of a rootless holder (package rootless): it says
// it is ready on its standard output, which its starter reads, and what
// goes wrong on its standard error, a log under the user's directory.
func hold() int {
	err := rootless.Hold(rootless.HolderDir(os.LookupEnv), func() {
		fmt.Println(rootless.Ready)
		os.Stdout.Close()
	}, func(err error) { fmt.Fprintln(os.Stderr, "nslab rootless holder:", err) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "nslab rootless holder:", err)
		return 1
	}
	return 0
}

// servesHost are the lab verbs that listen for the host's clients: run
// rootless, they stay in the host's network namespace.
var servesHost = map[string]bool{"web": true, "metrics": true}

// rootlessAsked reports whether the global options (before the verb) ask
// for --rootless.
func rootlessAsked(global []string) bool {
	for _, a := range global[1:] {
		if a == "--rootless" || a == "-rootless" || a == "--rootless=true" {
			return true
		}
	}
	return false
}

// commandAt is the index of the verb in args, after the global options
// (-1 when there is none).
func commandAt(args []string, app *cli.App) int {
	takesValue := valueFlags(app.Flags)
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return i
		}
		if name := strings.TrimLeft(a, "-"); !strings.Contains(name, "=") && takesValue[name] {
			i++
		}
	}
	return -1
}

// manager builds the lab manager from the global flags.
func manager(c *cli.Context) *lab.Manager {
	return &lab.Manager{NetnsDir: c.String("netns-dir"), StateDir: c.String("state-dir"), Sysfs: c.String("sysfs"), BeforeStep: beforeStep,
		Rootless: capabilities().Rootless, Owner: c.String(ownerFlagName)}
}

// capabilities is what this process may do here, found once (from its
// environment and the kernel's command line) and passed down: the lab
// manager, bench and the engine chooser take it.
var capabilities = sync.OnceValue(func() caps.Capabilities { return caps.Detect(os.LookupEnv) })

// beforeStep is nil in nslab; the CLI tests, which run their own binary as
// nslab, set it to pause a deploy at a known step (see main_test.go).
var beforeStep func(ctx context.Context, i int, s lab.Step) error

// hostOf is --host, given before the verb or after it.
func hostOf(c *cli.Context) string {
	for _, x := range c.Lineage() {
		if x.IsSet("host") {
			return x.String("host")
		}
	}
	return ""
}

// ownerFlagName is deploy's, apply's and destroy's hidden --owner: who the
// lab is deployed and destroyed for, when not a person (the Kubernetes
// agents give their Lab's namespace, name and UID). A destroy or apply
// for one owner leaves another's lab of the same name alone.
const ownerFlagName = "owner"

func ownerFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: ownerFlagName, Hidden: true, Usage: "who the lab is deployed for (the Kubernetes agents' Lab); a destroy or apply for another leaves the lab alone"}
}

// hostFlag is --host after the verb (nslab deploy --host a FILE), the
// same as the global option before it.
func hostFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "host", Usage: "the `HOST` this machine is, for a lab that spans hosts", EnvVars: []string{"NSLAB_HOST"}}
}

// topoFlag is the -t FILE flag shared by the verbs.
func topoFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "topo", Aliases: []string{"t"}, Usage: "topology `FILE`"}
}

// nodeTopoFlag is -t FILE of the verbs that act on one node of a deployed
// lab (impair, link, node): the lab of that file, and for a lab that
// spans hosts, the file that says which host holds the node.
func nodeTopoFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "topo", Aliases: []string{"t"}, Usage: "the lab of topology `FILE` (for a lab that spans hosts: run on the node's host, reached as the file says)"}
}

// labOfNode is the lab a verb about one node names: --name, or the lab
// of -t FILE; "" when neither says (the one lab that has the node).
func labOfNode(c *cli.Context) (string, error) {
	name, path := c.String("name"), c.String("topo")
	if path == "" {
		return name, nil
	}
	l, err := spec.ReadFile(path)
	if err != nil {
		return "", err
	}
	if name != "" && name != l.Name {
		return "", cli.Exit(fmt.Sprintf("--name %s and -t %s (lab %s) name two labs: give one", name, path, l.Name), 2)
	}
	return identifiedName(c, manager(c), l)
}

// topoPath returns -t FILE, or the first argument. Options must come
// before the file (the flag parser stops at the first argument), so
// anything after it is refused rather than silently ignored.
func topoPath(c *cli.Context) (string, error) {
	if c.NArg() > 1 || (c.String("topo") != "" && c.NArg() > 0) {
		file, rest := c.Args().First(), c.Args().Slice()[1:]
		if c.String("topo") != "" {
			file, rest = "-t "+c.String("topo"), c.Args().Slice()
		}
		return "", cli.Exit(fmt.Sprintf("unexpected %q after the file: put options before it: nslab %s %s %s", rest[0], c.Command.FullName(), strings.Join(rest, " "), file), 2)
	}
	if p := c.String("topo"); p != "" {
		return p, nil
	}
	if c.NArg() > 0 {
		return c.Args().First(), nil
	}
	return "", cli.Exit(fmt.Sprintf("no lab file: give it, as in nslab %s FILE (examples/ has some)", c.Command.FullName()), 2)
}

// readLab reads and validates the lab of -t FILE (or the first argument),
// with the namespace prefix --prefix gives, or the one its lab was
// deployed with.
func readLab(c *cli.Context) (*spec.Lab, error) {
	path, err := topoPath(c)
	if err != nil {
		return nil, err
	}
	l, err := spec.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := applyPrefix(c, manager(c), l); err != nil {
		return nil, err
	}
	walk.CheckPaths(l) // the runs the file's routes take nowhere: findings, not refusals
	return l, nil
}

// readPart is readLab for the verbs that work on a deployed lab: for a lab
// that spans hosts, the part of the host --host names.
func readPart(c *cli.Context) (*spec.Lab, error) {
	l, err := readLab(c)
	if err != nil {
		return nil, err
	}
	return partOf(c, l)
}

// partOf is lab l as this host deploys it: itself, or for a lab that
// spans hosts, the part of the host --host names.
func partOf(c *cli.Context, l *spec.Lab) (*spec.Lab, error) {
	host := hostOf(c)
	switch {
	case !l.Spans() && host == "":
		return l, nil
	case !l.Spans():
		return nil, cli.Exit(fmt.Sprintf("--host %s: lab %s does not span hosts (its file has no hosts: section): leave --host out", host, l.Name), 2)
	case host == "":
		return nil, cli.Exit(fmt.Sprintf("lab %s spans hosts %s: say which one this machine is with --host NAME (one command per host), or give each host ssh: [user@]host to run it on every host from here", l.Name, strings.Join(l.HostNames(), ", ")), 2)
	}
	p, err := l.PartOf(host)
	if err != nil {
		return nil, cli.Exit(err.Error(), 2)
	}
	return p, nil
}

// prefixFlag is --prefix P: the lab's namespaces are P and the node's
// name, whatever prefix: its file gives, so that a lab deploys beside
// another whose nodes have the same names without editing its file. A
// global option, and one of every verb that takes a file.
func prefixFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "prefix", Usage: "name the lab's namespaces `P` and the node's name instead of the file's prefix: (to deploy it beside a lab with the same node names); the verbs after deploy find it by itself"}
}

// prefixOf is --prefix, given before the verb or after it.
func prefixOf(c *cli.Context) (string, bool) {
	for _, x := range c.Lineage() {
		if x.IsSet("prefix") {
			return x.String("prefix"), true
		}
	}
	return "", false
}

// applyPrefix gives lab l the namespace prefix --prefix asks for, or,
// without it, the one the lab of its name was deployed with here (so
// that every verb after deploy --prefix finds its namespaces). A prefix
// other than the deployed lab's is refused: it names namespaces that lab
// does not have.
func applyPrefix(c *cli.Context, m *lab.Manager, l *spec.Lab) error {
	p, given := prefixOf(c)
	st, _ := m.Store().LoadState(l.Name)
	deployed := l.Prefix // the file's, unless the state records another
	if st != nil && st.Prefix != "" {
		deployed = st.Prefix
	}
	switch {
	case given && st != nil && deployed != p:
		return cli.Exit(fmt.Sprintf("--prefix %s: lab %s is deployed here with the prefix %q (its namespaces are %q and a node's name): leave --prefix out, or give that one", p, l.Name, deployed, deployed), 2)
	case given:
		if err := l.WithPrefix(p); err != nil {
			return cli.Exit("--prefix: "+err.Error(), 2)
		}
	case st != nil && st.Prefix != "" && st.Prefix != l.Prefix:
		if err := l.WithPrefix(st.Prefix); err != nil {
			return err
		}
	}
	return nil
}
