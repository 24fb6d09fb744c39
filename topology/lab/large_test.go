//go:build !vmtest

// The VM (emulated CPUs) leaves this one out: 3,000 namespaces there take minutes.

package lab

import (
	"fmt"
	"testing"

	"github.com/nslab/nslab/topology/generate"
)

// TestPrivilegedLargeGeneratedLab: a generated chain of 3,000 nodes, a
// file above the 1 MiB that nslab once refused, validates, deploys (one
// open file per node), answers across its first and last links, and goes
// without a trace.
func TestPrivilegedLargeGeneratedLab(t *testing.T) {
	const n = 3000
	src, err := generate.Lab(generate.Options{Kind: "chain", N: n, Routes: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(src) <= 1<<20 {
		t.Fatalf("the file is %d bytes: not above the old cap", len(src))
	}
	f := newFixture(t, src)
	if len(f.lab.Nodes) != n || len(f.lab.Links) != n-1 {
		t.Fatalf("%d nodes, %d links", len(f.lab.Nodes), len(f.lab.Links))
	}
	f.deploy()
	f.ping("n0", "10.0.0.2")
	last := f.lab.Node(fmt.Sprintf("n%d", n-1))
	left := last.Interface("l").Addresses[0].Addr()
	f.ping(fmt.Sprintf("n%d", n-2), left.String())
	if _, err := f.m.Destroy(f.lab.Name); err != nil {
		t.Fatal(err)
	}
	f.assertGone()
}
