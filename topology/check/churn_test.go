//go:build !vmtest

// Churn is about the host kernel's netlink: the VM leaves it out.

package check

import (
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/internal/labtest/labdeploy"
	"github.com/nslab/nslab/topology/ns"
)

// TestPrivilegedCheckUnderChurn: while another socket adds and deletes a
// veth pair with an address on it in the router's namespace, in a loop,
// check still finds every pair of the client-router-server lab answering,
// every time (while the churn makes 100 changes at least).
func TestPrivilegedCheckUnderChurn(t *testing.T) {
	l := labdeploy.Example(t, "client-router-server.yaml", "c")
	changes := labtest.Churn(t, labtest.Handle(t, ns.DefaultDir, l.Namespace("ns2")))
	for i := 0; i < 3 || changes.Load() < 100; i++ {
		assertAllOK(t, l)
	}
}
