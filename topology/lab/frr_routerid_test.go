package lab

import (
	"fmt"
	"testing"

	"github.com/nslab/nslab/topology/spec"
)

// TestZebraAddresses: the prefixes the deploy waits for before the
// protocol daemons start are those of frr.conf's and zebra.conf's
// interface addresses, as zebra names its connected routes.
func TestZebraAddresses(t *testing.T) {
	n := &spec.Node{
		FRR:   &spec.FRR{Config: "interface eth1\n ip address 192.168.1.1/24\n ipv6 address fc00::1/64\n!\ninterface lo\n ip address 10.10.10.1/32\n"},
		Files: []*spec.File{{Path: "/etc/frr/zebra.conf", Text: "interface eth2\n  ip address 172.16.0.5/30\n"}},
	}
	got := fmt.Sprint(zebraAddresses(n))
	if want := "[192.168.1.0/24 10.10.10.1/32 172.16.0.4/30]"; got != want {
		t.Errorf("zebraAddresses = %s, want %s", got, want)
	}
}
