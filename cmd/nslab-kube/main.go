// Command nslab-kube runs a lab that spans hosts on Kubernetes (package
// topology/kube): nslab agent --kubernetes, nslab deploy --kubernetes and
// nslab destroy --kubernetes check their arguments and run it in their
// place (exec). It is a program of its own because client-go, which it
// links, would make every nslab command larger and slower to start.
//
//	nslab-kube [-kubeconfig F] agent -node NODE -nslab EXE [-- NSLAB-GLOBAL-OPTIONS...]
//	nslab-kube [-kubeconfig F] [-namespace NS] deploy [-timeout D] FILE
//	nslab-kube [-kubeconfig F] [-namespace NS] destroy [-timeout D] FILE
//	nslab-kube [-kubeconfig F] [-namespace NS] lab FILE
//	nslab-kube [-kubeconfig F] exec -node NODE -- COMMAND...
//	nslab-kube manifests [-image REF]
//	nslab-kube image -root ROOT.tar -o OUT.tar [-tag REF] [-add SRC=DEST]... [-entrypoint CMD]
//
// lab prints the Lab of a deployed lab (its file and each host's node),
// and exec runs a command in the agent's pod on a node with nslab-kube's
// standard input and output (pods/exec, as kubectl exec -i): the
// coordinator of every other verb (nslab check --kubernetes FILE) reaches
// each host's agent so. exec exits with the command's exit code, or 255
// when it could not run it.
//
// The kubeconfig is found as kubectl finds it (-kubeconfig, $KUBECONFIG,
// ~/.kube/config), or, in a pod, the pod's ServiceAccount.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/nslab/nslab/cmd/internal/agentargv"
	"github.com/nslab/nslab/internal/fold"
	"math"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/nslab/nslab/topology/cgroup"
	"github.com/nslab/nslab/topology/fleet"
	"github.com/nslab/nslab/topology/kube"
	"github.com/nslab/nslab/topology/spec"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const usage = "usage: nslab-kube [-kubeconfig F] [-namespace NS] (agent -node NODE -nslab EXE [-- OPTIONS] | deploy FILE | destroy FILE | lab FILE | exec -node NODE -- COMMAND... | manifests [-image REF] | image -root ROOT.tar -o OUT.tar) (run by nslab's verbs with --kubernetes)"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig file (default: as kubectl finds it)")
	namespace := flag.String("namespace", "", "the Labs' namespace (default: the kubeconfig context's)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, *kubeconfig, *namespace, flag.Arg(0), flag.Args()[1:])
	if err != nil {
		var u usageError
		var code exitCode
		switch {
		case errors.As(err, &code) && code.code != 255:
			os.Exit(code.code) // the remote command's: it said why itself
		case errors.As(err, &u):
			fmt.Fprintf(os.Stderr, "nslab: %v\n", err)
			os.Exit(2)
		case errors.As(err, &code): // read by the coordinator, after the host's name
			fmt.Fprintln(os.Stderr, err)
			os.Exit(255)
		}
		fmt.Fprintf(os.Stderr, "nslab: %v\n", err)
		os.Exit(1)
	}
}

type usageError struct{ error }

// version is set at build time (-ldflags -X main.version=...), as nslab's.
var version = "dev"

func run(ctx context.Context, kubeconfig, namespace, verb string, args []string) error {
	switch verb { // the verbs that need no cluster
	case "image":
		return runImage(args)
	case "manifests":
		return runManifests(args)
	}
	cfg, ns, err := config(kubeconfig, namespace)
	if err != nil && verb == "exec" {
		return exitCode{255, err}
	}
	if err != nil {
		return err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	switch verb {
	case "agent":
		return runAgent(ctx, client, args)
	case "deploy", "destroy":
		return runCoordinator(ctx, client, ns, verb, args)
	case "lab":
		return runLab(ctx, client, ns, args)
	case "exec":
		return runExec(ctx, cfg, client, args)
	}
	return usageError{fmt.Errorf("unknown verb %q: %s", verb, usage)}
}

// config is the API server's address and credentials, and the namespace
// of Labs: a pod's own when in one and no kubeconfig is given.
func config(kubeconfig, namespace string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: namespace}})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("find the Kubernetes API server (a kubeconfig as kubectl finds it, or a pod's ServiceAccount): %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("the kubeconfig's namespace: %w", err)
	}
	return cfg, ns, nil
}

// runAgent is the agent of one node: it runs nslab (-nslab) with the
// global options after "--" for each share.
func runAgent(ctx context.Context, client dynamic.Interface, args []string) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	node := fs.String("node", os.Getenv("NODE_NAME"), "this Kubernetes node's name: the lab's host whose share is built here")
	exe := fs.String("nslab", "", "nslab's executable")
	resync := fs.Duration("resync", kube.DefaultResync, "how often every share on this node is checked against its Lab")
	ready := fs.String("ready", "", "a file written once the agent watches the Labs (for a readiness probe)")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *node == "" || *exe == "" {
		return usageError{errors.New("agent: give -node (or $NODE_NAME) and -nslab")}
	}
	global := fs.Args()
	// The verbs, and the daemons a deploy starts, go into a cgroup of the
	// node's own, outside this pod's: deleting the pod (a rollout) must
	// not take the labs' daemons with it.
	outside, err := cgroup.FindOutside("nslab-agent")
	if err != nil {
		return fmt.Errorf("agent: a cgroup outside this pod for the labs' daemons: %w (deploy/kubernetes/agent.yaml mounts the node's /sys/fs/cgroup)", err)
	}
	a := &kube.Agent{Node: *node, Client: client, Log: os.Stderr, Resync: *resync, Ready: *ready, Share: func() kube.Share {
		return &fleet.Agent{Exe: *exe, Start: outside.Start, Argv: func(host, labName string, args []string) []string {
			return agentargv.Spell(global, host, labName, args)
		}}
	}}
	return a.Run(ctx)
}

// runCoordinator deploys or destroys the lab of a file as a Lab.
func runCoordinator(ctx context.Context, client dynamic.Interface, ns, verb string, args []string) error {
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	timeout := fs.Duration("timeout", 10*time.Minute, "how long to wait for the agents")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		return usageError{fmt.Errorf("%s: give one FILE", verb)}
	}
	file, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	out := screen()
	c := &kube.Coordinator{Client: client, Namespace: ns, Out: out}
	if verb == "deploy" {
		return errors.Join(c.Deploy(ctx, fs.Arg(0), file), out.Flush())
	}
	l, err := spec.Parse(fs.Arg(0), file)
	if err != nil {
		return err
	}
	return errors.Join(c.Destroy(ctx, l.Name), out.Flush())
}

// screen is standard output folded as nslab folds its reports: at
// NSLAB_WIDTH characters (nslab's --width, which nslab sets for it), or
// fold.Width; 0 folds nothing.
func screen() *fold.Writer {
	width := fold.Width
	if v, err := strconv.Atoi(os.Getenv("NSLAB_WIDTH")); err == nil {
		width = v
	}
	if width <= 0 {
		width = math.MaxInt
	}
	return fold.New(os.Stdout, width)
}
