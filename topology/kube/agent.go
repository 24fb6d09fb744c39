package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/fleet"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
)

// Share runs nslab's verbs on one Lab's share of this node, in the
// node's own namespaces: a fleet.Agent, or a test's stand-in.
type Share interface {
	// Take checks the Lab's plan against the one this node computes
	// from the file, and keeps the file for Run.
	Take(p *fleet.Plan, host string, file []byte) error
	// TakeName has Run work on host's share of the lab by its name
	// alone (the verbs given fleet.NameArg).
	TakeName(lab, host string)
	Run(ctx context.Context, args ...string) (fleet.Response, error)
	Close()
}

// DefaultResync is how often an agent checks every share on its node
// against its Lab when nothing changed.
const DefaultResync = 30 * time.Second

// Agent owns, on one Kubernetes node, the share of every Lab placed on it
// (the lab's host whose placement is the node), level-triggered: each
// change of a Lab, and each resync, brings the share to what the Lab asks
// (built with its plan, or removed once it is deleted) and checks a built
// share against the node's kernel, writing the host's status. It runs in
// the node's own network namespace (hostNetwork), as nslab's SSH agent
// does, and runs nslab's verbs the same way.
type Agent struct {
	Node   string
	Client dynamic.Interface
	// Share is a new runner of nslab's verbs, one per Lab.
	Share func() Share
	Log   io.Writer
	// Resync is how often every Lab is reconciled again with nothing
	// changed (DefaultResync when 0): a share that drifted from its Lab
	// (a namespace removed, a node rebooted) shows in the status within
	// one resync.
	Resync time.Duration
	// Ready is a file written once the agent watches the Labs (the pod's
	// readiness probe reads it); "" for none.
	Ready string

	shares map[string]Share
	// built is the plan hash each Lab's share was last built (or failed,
	// or found) with, its status stored; by the Lab's key.
	built map[string]string
	// unwritten is the status of a share built whose write failed: it is
	// written again before anything else is done for the Lab.
	unwritten map[string]unwrittenStatus
	// invalid is the error last written into an unreadable Lab's status.
	invalid map[string]string
}

type unwrittenStatus struct {
	host string
	st   HostStatus
}

// The phase of a host whose share was built but no longer is what the
// Lab asks (a namespace removed by hand, a node rebooted), and of a Lab
// nslab cannot read.
const (
	Drifted = "Drifted"
	Invalid = "Invalid"
)

// Check asks the API server for the Labs, as the agent will: an agent
// whose ServiceAccount lacks the RBAC grant learns it here, at start.
func (a *Agent) Check(ctx context.Context) error {
	if _, err := a.Client.Resource(Labs).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("the API server refuses this agent the Lab resources (grant its ServiceAccount deploy/kubernetes/agent.yaml's ClusterRole): %w", err)
		}
		return fmt.Errorf("list Labs: %w", err)
	}
	return nil
}

func (a *Agent) init() {
	if a.shares == nil {
		a.shares, a.built, a.unwritten, a.invalid = map[string]Share{}, map[string]string{}, map[string]unwrittenStatus{}, map[string]string{}
	}
}

// Run reconciles the Labs on this node until ctx ends, one at a time. It
// leaves the shares built when it ends: a restarted agent (a DaemonSet's
// rollout, a pod deleted) takes them up again; deleting a Lab is what
// removes one.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.Check(ctx); err != nil {
		return err
	}
	resync := a.Resync
	if resync <= 0 {
		resync = DefaultResync
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(a.Client, resync)
	inf := factory.ForResource(Labs).Informer()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](500*time.Millisecond, 30*time.Second))
	defer q.ShutDown()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			q.Add(key)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return ctx.Err()
	}
	fmt.Fprintf(a.Log, "nslab agent: node %s: watching Labs (checked every %v)\n", a.Node, resync)
	if a.Ready != "" {
		if err := os.WriteFile(a.Ready, []byte("watching\n"), 0o644); err != nil {
			return fmt.Errorf("readiness file: %w", err)
		}
	}
	go func() { <-ctx.Done(); q.ShutDown() }()
	a.init()
	defer func() {
		for _, s := range a.shares {
			s.Close()
		}
	}()
	for {
		key, quit := q.Get()
		if quit {
			return nil
		}
		err := a.reconcile(ctx, inf.GetIndexer(), key)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(a.Log, "nslab agent: node %s: Lab %s: %v (tried again)\n", a.Node, key, err)
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}

// reconcile brings this node's share of the Lab at key to what the Lab
// asks: built with its plan, or removed when it is deleted; and checks a
// built share against the kernel.
func (a *Agent) reconcile(ctx context.Context, idx cache.Indexer, key string) error {
	a.init()
	obj, exists, err := idx.GetByKey(key)
	if err != nil {
		return err
	}
	if !exists { // gone: our finalizer was off, so our share was too
		if s := a.shares[key]; s != nil {
			s.Close()
			delete(a.shares, key)
		}
		delete(a.built, key)
		delete(a.unwritten, key)
		delete(a.invalid, key)
		return nil
	}
	u := obj.(*unstructured.Unstructured)
	l, err := ReadLab(u)
	if err != nil {
		return a.unreadable(ctx, key, u, err)
	}
	delete(a.invalid, key)
	host := l.HostOn(a.Node)
	if host == "" {
		return nil // no host of the lab is placed here
	}
	if l.Deleting {
		return a.remove(ctx, l.Namespace, l.Name, l.UID, l.Owner(), key, host, l.Finalizers)
	}
	if w, ok := a.unwritten[key]; ok && w.st.PlanHash == l.Plan.Hash {
		return a.store(ctx, l, key, w.host, w.st)
	}
	st := l.Status.Hosts[host]
	switch {
	case st.PlanHash == l.Plan.Hash && (st.Phase == Deployed || st.Phase == Drifted):
		return a.verify(ctx, l, key, host, st)
	case a.built[key] == l.Plan.Hash: // stored; the cache does not show it yet
		return nil
	case st.PlanHash == l.Plan.Hash && st.Phase == Failed:
		a.built[key] = l.Plan.Hash
		return nil // a failure is the coordinator's to act on
	}
	return a.build(ctx, l, key, host)
}

// build deploys host's share of l, placed on this node, and stores how it
// went.
func (a *Agent) build(ctx context.Context, l *Lab, key, host string) error {
	s := a.share(key)
	st := HostStatus{Phase: Deployed, Node: a.Node, PlanHash: l.Plan.Hash, Nodes: len(l.Plan.Share(host).Nodes)}
	if err := s.Take(l.Plan, host, l.File); err != nil {
		// A plan this node refuses (another build of nslab computes
		// another): said in the status; the Lab stays deletable, since
		// its removal needs only the lab's name.
		st.Phase, st.Message = Failed, "plan refused: "+err.Error()
		fmt.Fprintf(a.Log, "nslab agent: node %s: Lab %s: host %s: %s\n", a.Node, key, host, st.Message)
		return a.store(ctx, l, key, host, st)
	}
	args := []string{"deploy", "-q", fleet.Owned(l.Owner()), fleet.FileArg}
	if prev := l.Status.Hosts[host]; prev.Phase == Deployed || prev.Phase == Drifted || a.built[key] != "" {
		// A new plan over a share built with another (or whose apply of
		// one failed and was undone); apply prints only what it changed.
		args = []string{"apply", fleet.Owned(l.Owner()), fleet.FileArg}
	}
	verb := args[0]
	res, err := s.Run(ctx, args...)
	switch {
	case err != nil:
		return err
	case res.Code != 0:
		st.Phase, st.Message = Failed, verb+": "+lastLine(res.Stderr+res.Stdout)
	default:
		st.Message = lastLine(res.Stdout)
	}
	fmt.Fprintf(a.Log, "nslab agent: node %s: Lab %s: host %s: %s: %s %s\n", a.Node, key, host, verb, st.Phase, st.Message)
	return a.store(ctx, l, key, host, st)
}

// store writes st as host's status of l; only once it is stored is the
// share marked built with l's plan, so that a failed write is tried again
// (and the share not built twice).
func (a *Agent) store(ctx context.Context, l *Lab, key, host string, st HostStatus) error {
	if err := a.writeStatus(ctx, l, host, st); err != nil {
		a.unwritten[key] = unwrittenStatus{host, st}
		return fmt.Errorf("store host %s's status (%s): %w", host, st.Phase, err)
	}
	delete(a.unwritten, key)
	a.built[key] = l.Plan.Hash
	return nil
}

// inspected is what nslab inspect --format json says of a lab, as far as
// the agent reads it.
type inspected struct {
	SHA256 string `json:"sha256"`
	Owner  string `json:"owner"`
	Nodes  []struct {
		Node     string `json:"node"`
		Present  bool   `json:"present"`
		ViewGone string `json:"view_gone"`
	} `json:"nodes"`
}

// verify checks host's share of l, built, against the node's kernel
// (nslab inspect): a node whose namespace or view is gone, or the lab gone, is
// drift, written in the status; a share that is whole again is Deployed
// again. An agent that finds a share it did not build (its pod was
// restarted) says so in the status, once.
func (a *Agent) verify(ctx context.Context, l *Lab, key, host string, st HostStatus) error {
	s := a.share(key)
	s.TakeName(l.Name, host)
	res, err := s.Run(ctx, "inspect", fleet.NameArg, fleet.JSONArg)
	if err != nil {
		return err
	}
	var drift []string
	var info inspected
	switch {
	case res.Code != 0:
		drift = append(drift, "the lab is not deployed on this node ("+lastLine(res.Stderr+res.Stdout)+")")
	case json.Unmarshal([]byte(res.Stdout), &info) != nil:
		return fmt.Errorf("read nslab inspect's JSON: %q", lastLine(res.Stdout))
	case info.Owner != l.Owner():
		drift = append(drift, "the lab of this name on this node is another's ("+info.Owner+")")
	}
	for _, n := range info.Nodes {
		switch {
		case !n.Present:
			drift = append(drift, "node "+n.Node+"'s namespace is gone")
		case n.ViewGone != "":
			drift = append(drift, "node "+n.Node+"'s view is gone (what runs in the node no longer reaches its daemons)")
		}
	}
	next := st
	switch {
	case len(drift) > 0:
		next.Phase, next.Message = Drifted, strings.Join(drift, "; ")
	case st.Phase == Drifted:
		next.Phase, next.Message = Deployed, "whole again: every node's namespace and view is present"
	case a.built[key] != l.Plan.Hash:
		next.Message = fmt.Sprintf("taken up by this agent: %d nodes present", len(info.Nodes))
	}
	if next.Phase == st.Phase && next.Message == st.Message {
		a.built[key] = l.Plan.Hash
		return nil
	}
	if next.Phase != st.Phase {
		fmt.Fprintf(a.Log, "nslab agent: node %s: Lab %s: host %s: %s: %s\n", a.Node, key, host, next.Phase, next.Message)
	}
	return a.store(ctx, l, key, host, next)
}

// remove destroys host's share of the deleted Lab namespace/name (uid),
// placed on this node, and takes host's finalizer off it. The destroy
// needs only the lab's name and owner, so a Lab whose plan this node
// refused, or cannot read, is removed all the same.
func (a *Agent) remove(ctx context.Context, namespace, name, uid, owner, key, host string, finalizers []string) error {
	fin := Finalizer(host)
	if !slices.Contains(finalizers, fin) {
		return nil
	}
	s := a.share(key)
	s.TakeName(name, host)
	res, err := s.Run(ctx, "destroy", fleet.Owned(owner), fleet.NameArg)
	switch {
	case err != nil:
		return err
	case res.Code == fleet.ExitNotOwner:
		// This Lab never built a share here: the lab of its name on this
		// node is another's (another namespace's Lab of the same name,
		// or a person's). It is left alone, and the finalizer comes off.
		fmt.Fprintf(a.Log, "nslab agent: node %s: Lab %s: host %s: no share of this Lab here (%s): nothing removed\n", a.Node, key, host, lastLine(res.Stderr))
	case res.Code != 0:
		return fmt.Errorf("destroy: %s", lastLine(res.Stderr+res.Stdout))
	default:
		fmt.Fprintf(a.Log, "nslab agent: node %s: Lab %s: host %s: share removed\n", a.Node, key, host)
	}
	delete(a.built, key)
	delete(a.unwritten, key)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := a.Client.Resource(Labs).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case string(u.GetUID()) != uid:
			return nil // that Lab is gone, and a new Lab of its name holds a share this agent has yet to build
		}
		u.SetFinalizers(withoutFinalizer(u.GetFinalizers(), fin))
		_, err = a.Client.Resource(Labs).Namespace(namespace).Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
}

// unreadable is a Lab nslab cannot read (its spec written by hand, or by
// another version): its status says why, once, and the log too; deleted,
// the share of each host placed on this node is removed by the lab's
// name all the same.
func (a *Agent) unreadable(ctx context.Context, key string, u *unstructured.Unstructured, rerr error) error {
	if u.GetDeletionTimestamp() != nil {
		placement, _, _ := unstructured.NestedStringMap(u.Object, "spec", "placement")
		for host, node := range placement {
			if node != a.Node {
				continue
			}
			owner := (&Lab{Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID())}).Owner()
			if err := a.remove(ctx, u.GetNamespace(), u.GetName(), string(u.GetUID()), owner, key, host, u.GetFinalizers()); err != nil {
				return err
			}
		}
		return nil
	}
	msg := rerr.Error()
	if a.invalid[key] == msg {
		return nil
	}
	fmt.Fprintf(a.Log, "nslab agent: node %s: Lab %s cannot be read: %s\n", a.Node, key, msg)
	if cur, _, _ := unstructured.NestedString(u.Object, "status", "message"); cur != msg {
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"phase": Invalid, "message": msg}})
		if err != nil {
			return err
		}
		if _, err := a.Client.Resource(Labs).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("write why the Lab cannot be read: %w", err)
		}
	}
	a.invalid[key] = msg
	return nil
}

// share is the runner of nslab's verbs for the Lab at key.
func (a *Agent) share(key string) Share {
	a.init()
	if a.shares[key] == nil {
		a.shares[key] = a.Share()
	}
	return a.shares[key]
}

// writeStatus writes st as host's entry of l's status (a merge patch of
// that entry alone: agents of other nodes writing theirs at once never
// conflict with it), then the lab's phase and ready count from every
// host's entry (read, changed and written back under the resource's
// version, tried again on a conflict).
func (a *Agent) writeStatus(ctx context.Context, l *Lab, host string, st HostStatus) error {
	st.Updated = time.Now().UTC().Format(time.RFC3339Nano)
	labs := a.Client.Resource(Labs).Namespace(l.Namespace)
	entry, err := toMap(st)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"hosts": map[string]any{host: entry}}})
	if err != nil {
		return err
	}
	if _, err := labs.Patch(ctx, l.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := labs.Get(ctx, l.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur, err := ReadLab(u)
		if err != nil {
			return err
		}
		phase, ready := cur.Summary()
		if phase == cur.Status.Phase && ready == cur.Status.Ready {
			return nil
		}
		if err := unstructured.SetNestedField(u.Object, phase, "status", "phase"); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, ready, "status", "ready"); err != nil {
			return err
		}
		_, err = labs.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err
	})
}

// lastLine is text's last line that is not empty: what nslab's verb said
// last, its outcome or its error.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
