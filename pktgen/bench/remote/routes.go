package remote

import (
	"fmt"

	"github.com/nslab/nslab/topology/spec"
)

// LearnRoutes writes into l's model the routes the kernels of the nodes
// on other hosts hold (those the local Learn did not read), asked of
// their hosts: so that a path over hosts follows what their routing
// daemons learned, as a path on one host does.
func LearnRoutes(t Transport, l *spec.Lab) error {
	asks := map[string]Request{}
	for _, n := range l.Model().Nodes {
		if !n.KernelRead && n.Host != "" {
			asks[n.Host] = Request{Op: OpRoutes}
		}
	}
	if len(asks) == 0 {
		return nil
	}
	answers, err := t.Ask(asks)
	if err != nil {
		return err
	}
	for host, a := range answers {
		if a.Error != "" {
			return fmt.Errorf("host %s: read its nodes' routes: %s", host, a.Error)
		}
	}
	for _, n := range l.Model().Nodes {
		routes, ok := answers[n.Host].Routes[n.Name]
		if n.KernelRead || !ok {
			continue
		}
		n.Learned, n.KernelRead = nil, true
		for i := range routes {
			n.Learned = append(n.Learned, &routes[i])
		}
	}
	return nil
}
