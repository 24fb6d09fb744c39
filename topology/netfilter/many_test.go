package netfilter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/spec"
)

// TestPrivilegedManyRules: a firewall of 2,000 rules is one batch of
// thousands of messages, each acknowledged: the kernel holds it (Check, in
// a scratch namespace) rather than the acknowledgements overflowing the
// socket's receive buffer (ENOBUFS, "no buffer space available", which
// deploy would misread as a kernel without nftables).
func TestPrivilegedManyRules(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	var rules strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&rules, "        - drop: {in: lan0, to: 10.%d.%d.0/24}\n", i/250, i%250)
	}
	src := strings.Replace(lab, "        - drop: {in: lan0, to: 10.16.0.0/12}\n", rules.String(), 1)
	l, err := spec.Parse("many.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(l.Name, l.Node("gw")); err != nil {
		t.Fatalf("2,000 rules: %v", err)
	}
}
