package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/nslab/nslab/topology/kube"
	"github.com/nslab/nslab/topology/spec"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
)

// The agents' pods: the DaemonSet of deploy/kubernetes/agent.yaml.
const (
	agentNamespace = "nslab-system"
	agentSelector  = "app.kubernetes.io/name=nslab-agent"
	agentContainer = "agent"
)

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// exitCode is how nslab-kube exec ends: the remote command's exit code,
// or 255 when the exec itself failed (as ssh does), with why.
type exitCode struct {
	code int
	err  error
}

func (e exitCode) Error() string { return e.err.Error() }

// runExec runs the command after "--" in the nslab agent's pod on -node,
// through the API server's pods/exec and the node's kubelet, its standard
// input, output and error joined to nslab-kube's, as kubectl exec -i
// does. The coordinator reaches the agents of a lab on Kubernetes this
// way (package fleet's KubeExec).
func runExec(ctx context.Context, cfg *rest.Config, client dynamic.Interface, args []string) error {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	node := fs.String("node", "", "the Kubernetes node whose agent pod runs the command")
	if err := fs.Parse(args); err != nil || *node == "" || fs.NArg() == 0 {
		return usageError{errors.New("exec: give -node NODE, then -- and the command")}
	}
	pod, err := agentPod(ctx, client, *node)
	if err != nil {
		return exitCode{255, err}
	}
	ex, err := podExec(cfg, pod, fs.Args())
	if err != nil {
		return exitCode{255, err}
	}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	var ee utilexec.ExitError
	switch {
	case errors.As(err, &ee):
		return exitCode{ee.ExitStatus(), err}
	case err != nil:
		return exitCode{255, fmt.Errorf("exec in pod %s/%s on node %s: %w", agentNamespace, pod, *node, err)}
	}
	return nil
}

// agentPod is the name of the nslab agent's pod on node.
func agentPod(ctx context.Context, client dynamic.Interface, node string) (string, error) {
	list, err := client.Resource(pods).Namespace(agentNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: agentSelector, FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return "", fmt.Errorf("find the nslab agent's pod on node %s (pods %s in namespace %s): %w", node, agentSelector, agentNamespace, err)
	}
	for _, p := range list.Items {
		if p.GetDeletionTimestamp() == nil {
			return p.GetName(), nil
		}
	}
	return "", fmt.Errorf("node %s runs no nslab agent (no pod %s in namespace %s): the DaemonSet of deploy/kubernetes/agent.yaml runs one on every node it may", node, agentSelector, agentNamespace)
}

// podExec is the executor of cmd in the agent container of pod: over a
// WebSocket, or SPDY from an API server that does not upgrade to one.
func podExec(cfg *rest.Config, pod string, cmd []string) (remotecommand.Executor, error) {
	u, err := url.Parse(strings.TrimSuffix(cfg.Host, "/") + "/api/v1/namespaces/" + agentNamespace + "/pods/" + pod + "/exec")
	if err != nil {
		return nil, fmt.Errorf("the API server's address %q: %w", cfg.Host, err)
	}
	q := url.Values{"container": {agentContainer}, "stdin": {"true"}, "stdout": {"true"}, "stderr": {"true"}, "command": cmd}
	u.RawQuery = q.Encode()
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// labOnCluster is what a verb run on every host of a lab on Kubernetes
// needs of its Lab: the file its plan was computed from (with the
// underlays placement wrote in) and the node of each host.
type labOnCluster struct {
	Namespace string            `json:"namespace"`
	File      string            `json:"file"`
	Nodes     map[string]string `json:"nodes"`
}

// runLab prints the Lab of the lab in FILE as JSON (labOnCluster). It
// refuses a FILE that is not the one the Lab was deployed or applied
// from, as an agent over SSH refuses another plan: the hosts run the
// Lab's, and a verb would read one lab and act on another.
func runLab(ctx context.Context, client dynamic.Interface, ns string, args []string) error {
	if len(args) != 1 {
		return usageError{errors.New("lab: give one FILE")}
	}
	l, err := spec.ReadFile(args[0])
	if err != nil {
		return err
	}
	u, err := client.Resource(kube.Labs).Namespace(ns).Get(ctx, l.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("lab %s has no Lab in namespace %s: deploy it on Kubernetes first (nslab deploy --kubernetes %s)", l.Name, ns, args[0])
	}
	if err != nil {
		return fmt.Errorf("read Lab %s/%s: %w", ns, l.Name, err)
	}
	lab, err := kube.ReadLab(u)
	if err != nil {
		return err
	}
	if lab.Source != "" && lab.Source != l.SHA256 {
		return fmt.Errorf("%s is not the file Lab %s/%s was deployed from (their SHA-256 differ), and its hosts run that one: give that file, or apply this one (nslab apply --kubernetes %s)", args[0], ns, l.Name, args[0])
	}
	out := labOnCluster{Namespace: ns, File: string(lab.File), Nodes: map[string]string{}}
	for _, h := range lab.Plan.Hosts() {
		out.Nodes[h] = h
		if n := lab.Placement[h]; n != "" {
			out.Nodes[h] = n
		}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
