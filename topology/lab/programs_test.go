package lab

import (
	"errors"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/spec"
)

// TestCheckPrograms: a program no machine has is named with the lines
// that run it (file and line), a service line of a service nslab does
// not run is named with the ones it does, and what a node's own files or
// directories give, or the host has, is not.
func TestCheckPrograms(t *testing.T) {
	file := `name: x
nodes:
  a:
    exec:
      - nslab-no-such-program-1 -a && ip link
      - /tmp/made-by-an-earlier-line.sh
      - systemctl start openvswitch-switch
      - /etc/init.d/mine start
    run:
      - nslab-no-such-program-1 --serve
    files:
      /etc/init.d/mine: {text: "#!/bin/sh\n", mode: "0755"}
  b:
    exec: [sh -c true]
links:
  - {endpoints: [a:eth0, b:eth0]}
`
	l, err := spec.Parse("x.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckPrograms(l)
	var pe *ProgramsError
	if !errors.As(err, &pe) {
		t.Fatalf("CheckPrograms: %v, want a ProgramsError", err)
	}
	if len(pe.Missing) != 1 || pe.Missing[0].Program != "nslab-no-such-program-1" || len(pe.Missing[0].Where) != 2 {
		t.Errorf("missing %+v, want nslab-no-such-program-1 from exec line 1 and run line 1", pe.Missing)
	}
	for _, want := range []string{
		"nslab-no-such-program-1 (no Debian package nslab knows of brings it), which node a's exec line 1 (x.yaml:5) and node a's run line 1 (x.yaml:10) run",
		`node a's exec line 3 (x.yaml:7), "systemctl start openvswitch-switch", starts service openvswitch-switch: no systemd runs in a node`,
		"apache2, bind9",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\ndoes not say %q", err, want)
		}
	}
	for _, not := range []string{"made-by-an-earlier-line", "/etc/init.d/mine", " sh ", "node b"} {
		if strings.Contains(err.Error(), not) {
			t.Errorf("%v\nnames %q, which the node or the host has", err, not)
		}
	}
}
