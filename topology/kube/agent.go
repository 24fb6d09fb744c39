package kube

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/fleet"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
)

// Agent builds, on one Kubernetes node, the share of every Lab placed on
// it (the lab's host whose placement is the node) and removes it when the
// Lab is deleted. It runs in the node's own namespaces (hostNetwork, hostPID),
// as nslab's SSH agent does, and runs nslab's verbs the same way.
type Agent struct {
	Node   string
	Client dynamic.Interface
	// Share runs a verb on a lab's share of this node: a fleet.Agent per
	// lab (Exe, Argv set; the rest is the agent's own).
	Share func() *fleet.Agent
	Log   io.Writer

	shares map[string]*fleet.Agent // by the Lab's key
	built  map[string]string       // the plan hash each Lab's share was last built (or failed) with, by key
}

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

// Run reconciles the Labs on this node until ctx ends, one at a time. It
// leaves the shares built when it ends: a restarted agent (a DaemonSet's
// rollout) takes them up again; deleting a Lab is what removes one.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.Check(ctx); err != nil {
		return err
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(a.Client, 10*time.Minute)
	inf := factory.ForResource(Labs).Informer()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
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
	fmt.Fprintf(a.Log, "nslab agent: node %s: watching Labs\n", a.Node)
	go func() { <-ctx.Done(); q.ShutDown() }()
	a.shares, a.built = map[string]*fleet.Agent{}, map[string]string{}
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
// asks: built with its plan, or removed when it is deleted.
func (a *Agent) reconcile(ctx context.Context, idx cache.Indexer, key string) error {
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
		return nil
	}
	l, err := ReadLab(obj.(*unstructured.Unstructured))
	if err != nil {
		return nil // not readable: nothing for this node to do
	}
	host := l.HostOn(a.Node)
	if host == "" {
		return nil // no host of the lab is placed here
	}
	st := l.Status.Hosts[host]
	switch {
	case l.Deleting:
		return a.remove(ctx, l, key, host)
	case a.built[key] == l.Plan.Hash: // this agent did (the cache may not show its status yet)
		return nil
	case st.PlanHash == l.Plan.Hash && (st.Phase == Deployed || st.Phase == Failed):
		return nil // done with this plan (a failure is the coordinator's to act on)
	}
	return a.build(ctx, l, key, host)
}

// build deploys host's share of l, placed on this node, and writes how
// it went.
func (a *Agent) build(ctx context.Context, l *Lab, key, host string) error {
	s := a.share(key)
	st := HostStatus{Phase: Deployed, Node: a.Node, PlanHash: l.Plan.Hash, Nodes: len(l.Plan.Share(host).Nodes)}
	if err := s.Take(l.Plan, host, l.File); err != nil {
		st.Phase, st.Message = Failed, "plan: "+err.Error()
		return a.writeStatus(ctx, l, host, st)
	}
	args := []string{"deploy", "-q", fleet.Owned(l.Owner()), fleet.FileArg}
	if prev := l.Status.Hosts[host]; prev.Phase == Deployed || a.built[key] != "" {
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
	a.built[key] = l.Plan.Hash
	return a.writeStatus(ctx, l, host, st)
}

// remove destroys host's share of the deleted l, placed on this node,
// and takes host's finalizer off it.
func (a *Agent) remove(ctx context.Context, l *Lab, key, host string) error {
	fin := Finalizer(host)
	if !slices.Contains(l.Finalizers, fin) {
		return nil
	}
	s := a.share(key)
	if err := s.Take(l.Plan, host, l.File); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	res, err := s.Run(ctx, "destroy", fleet.Owned(l.Owner()), fleet.FileArg)
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
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := a.Client.Resource(Labs).Namespace(l.Namespace).Get(ctx, l.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case string(u.GetUID()) != l.UID:
			return nil // l is gone, and a new Lab of its name holds a share this agent has yet to build
		}
		u.SetFinalizers(withoutFinalizer(u.GetFinalizers(), fin))
		_, err = a.Client.Resource(Labs).Namespace(l.Namespace).Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
}

// share is the runner of nslab's verbs for the Lab at key.
func (a *Agent) share(key string) *fleet.Agent {
	if a.shares[key] == nil {
		a.shares[key] = a.Share()
	}
	return a.shares[key]
}

// writeStatus writes st as host's status of l, with the lab's phase and
// ready count again (read, changed and written back under the resource's
// version: another node's agent writes its own at once).
func (a *Agent) writeStatus(ctx context.Context, l *Lab, host string, st HostStatus) error {
	st.Updated = time.Now().UTC().Format(time.RFC3339Nano)
	labs := a.Client.Resource(Labs).Namespace(l.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := labs.Get(ctx, l.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur, err := ReadLab(u)
		if err != nil {
			return err
		}
		if cur.Status.Hosts == nil {
			cur.Status.Hosts = map[string]HostStatus{}
		}
		cur.Status.Hosts[host] = st
		cur.Status.Phase, cur.Status.Ready = cur.Summary()
		m, err := toMap(cur.Status)
		if err != nil {
			return err
		}
		u.Object["status"] = m
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
