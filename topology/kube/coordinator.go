package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/fleet"
	"github.com/nslab/nslab/topology/spec"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// Coordinator creates and deletes Lab resources in one namespace, on the
// machine where the user types, and waits for the agents.
type Coordinator struct {
	Client    dynamic.Interface
	Namespace string
	Out       io.Writer
}

// Deploy places the hosts of the lab in file (read from path) on nodes,
// writes its plan as a Lab, or as the new spec of the Lab of that name,
// and waits until every host's agent has built its share with it. When
// one fails, or ctx ends first, the Lab is deleted, which has every agent
// remove its share, and the error names the host; but a new spec over a
// Lab every host had deployed (an apply) is replaced by that one again.
func (c *Coordinator) Deploy(ctx context.Context, path string, file []byte) error {
	start := time.Now()
	source := spec.FileSHA(file)
	plan, file, placement, err := c.place(ctx, path, file)
	if err != nil {
		return err
	}
	u, err := NewLab(c.Namespace, plan, file, source, placement)
	if err != nil {
		return err
	}
	labs := c.Client.Resource(Labs).Namespace(c.Namespace)
	done, previous := "deployed", map[string]any(nil)
	_, err = labs.Create(ctx, u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		done = "applied" // a new spec: each agent applies it over its share
		previous, err = c.respec(ctx, u)
	}
	if err != nil {
		return fmt.Errorf("create Lab %s/%s: %w", c.Namespace, plan.Lab, err)
	}
	l, err := c.settled(ctx, plan.Lab)
	if err == nil {
		failed := l.FailedHosts()
		if len(failed) == 0 {
			c.printHosts(l)
			fmt.Fprintf(c.Out, "%s lab %s on hosts %s as Lab %s/%s in %v\n", done, plan.Lab, strings.Join(plan.Hosts(), ", "), c.Namespace, plan.Lab, time.Since(start).Round(time.Millisecond))
			return nil
		}
		err = fmt.Errorf("host %s: %s", failed[0], l.Status.Hosts[failed[0]].Message)
	}
	undo, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if previous != nil && c.restore(undo, plan.Lab, previous) == nil {
		return fmt.Errorf("%w; the Lab is back to its previous spec, which every host runs again", err)
	}
	// Said as part of the error, not as a "destroyed" line on standard
	// output: an agent that refused (or had not yet built) its share has
	// nothing to take back, and a reader of that line alone would take
	// the lab to have been deployed.
	if derr := c.remove(undo, plan.Lab); derr != nil && !errors.Is(derr, errNoLab) {
		return fmt.Errorf("%w; taking back what the hosts had built failed too: %w", err, derr)
	}
	return fmt.Errorf("%w; the Lab was deleted and every share a host had built was taken back", err)
}

// place computes the plan of the lab in file with each host placed on a
// node (Place), the file with the underlays placing learned written in.
func (c *Coordinator) place(ctx context.Context, path string, file []byte) (*fleet.Plan, []byte, Placement, error) {
	l, err := spec.Parse(path, file)
	if err != nil {
		return nil, nil, nil, err
	}
	placement, underlays, err := Place(ctx, c.Client, l)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(underlays) > 0 {
		if file, err = spec.WithUnderlays(file, underlays); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: write the nodes' addresses in: %w", path, err)
		}
	}
	plan, err := PlanFile(path, file)
	return plan, file, placement, err
}

// respec writes fresh's spec into the existing Lab of its name, and
// returns the spec it replaced when every host had deployed that one
// (nil otherwise: there is nothing whole to go back to).
func (c *Coordinator) respec(ctx context.Context, fresh *unstructured.Unstructured) (map[string]any, error) {
	labs := c.Client.Resource(Labs).Namespace(c.Namespace)
	u, err := labs.Get(ctx, fresh.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if u.GetDeletionTimestamp() != nil {
		return nil, fmt.Errorf("it is being deleted: wait until every host's agent has removed its share and the Lab is gone")
	}
	var previous map[string]any
	if l, err := ReadLab(u); err == nil {
		if phase, _ := l.Summary(); phase == Deployed {
			previous, _ = u.Object["spec"].(map[string]any)
		}
	}
	u.Object["spec"] = fresh.Object["spec"]
	_, err = labs.Update(ctx, u, metav1.UpdateOptions{})
	return previous, err
}

// restore puts the previous spec back into the Lab name after an apply
// failed on a host, and waits until every host runs it again.
func (c *Coordinator) restore(ctx context.Context, name string, previous map[string]any) error {
	fresh := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name}, "spec": previous}}
	if _, err := c.respec(ctx, fresh); err != nil {
		return err
	}
	l, err := c.settled(ctx, name)
	if err != nil {
		return err
	}
	if phase, _ := l.Summary(); phase != Deployed {
		return fmt.Errorf("the previous spec did not deploy again: %s", phase)
	}
	return nil
}

// Destroy deletes the Lab name and waits until every host's agent has
// removed its share (the Lab is gone).
func (c *Coordinator) Destroy(ctx context.Context, name string) error {
	err := c.remove(ctx, name)
	switch {
	case errors.Is(err, errNoLab):
		fmt.Fprintf(c.Out, "lab %s has no Lab in namespace %s: nothing to destroy\n", name, c.Namespace)
		return nil
	case err == nil:
		fmt.Fprintf(c.Out, "destroyed lab %s: Lab %s/%s and every host's share removed\n", name, c.Namespace, name)
	}
	return err
}

// errNoLab: remove found no Lab of the name.
var errNoLab = errors.New("no such Lab")

// remove deletes the Lab name and waits until it is gone (every agent
// has removed its share, or had none); it prints nothing.
func (c *Coordinator) remove(ctx context.Context, name string) error {
	err := c.Client.Resource(Labs).Namespace(c.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return errNoLab
	}
	if err != nil {
		return fmt.Errorf("delete Lab %s/%s: %w", c.Namespace, name, err)
	}
	var last *Lab
	_, err = c.wait(ctx, name, func(l *Lab) bool { last = l; return false })
	if errors.Is(err, errGone) {
		return nil
	}
	if last != nil {
		return fmt.Errorf("Lab %s/%s: the agents of %s have not removed their share: %w", c.Namespace, name, strings.Join(last.Finalizers, ", "), err)
	}
	return err
}

var errGone = errors.New("the Lab is gone")

// settled waits until every host's agent has built the Lab name's spec,
// or one failed with it (its phase is no longer Pending).
func (c *Coordinator) settled(ctx context.Context, name string) (*Lab, error) {
	return c.wait(ctx, name, func(l *Lab) bool {
		phase, _ := l.Summary()
		return phase != Pending
	})
}

// wait watches the Lab name until done says so, it is gone (errGone), or
// ctx ends: each change the API server tells, none polled for.
func (c *Coordinator) wait(ctx context.Context, name string, done func(*Lab) bool) (*Lab, error) {
	labs := c.Client.Resource(Labs).Namespace(c.Namespace)
	only := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = only
			return labs.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = only
			return labs.Watch(ctx, o)
		},
	}
	absent := func(store cache.Store) (bool, error) {
		if len(store.List()) == 0 {
			return true, errGone
		}
		return false, nil
	}
	var last *Lab
	_, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, absent, func(e watch.Event) (bool, error) {
		if e.Type == watch.Deleted {
			return true, errGone
		}
		u, ok := e.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil // a bookmark or the watch's own error, taken care of by the watch
		}
		l, err := ReadLab(u)
		if err != nil {
			return true, err
		}
		last = l
		return done(l), nil
	})
	switch {
	case errors.Is(err, errGone):
		return nil, errGone
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("waiting for Lab %s/%s: %w", c.Namespace, name, ctx.Err())
	case err != nil:
		return nil, fmt.Errorf("watch Lab %s/%s: %w", c.Namespace, name, err)
	}
	return last, nil
}

// printHosts says each host's share as its agent wrote it.
func (c *Coordinator) printHosts(l *Lab) {
	for _, h := range l.Plan.Hosts() {
		st := l.Status.Hosts[h]
		fmt.Fprintf(c.Out, "host %s (node %s): %s, %d nodes: %s\n", h, l.NodeOf(h), strings.ToLower(st.Phase), st.Nodes, st.Message)
	}
}
