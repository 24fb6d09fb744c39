package watch

import (
	"fmt"
	"testing"
	"time"

	"github.com/nslab/nslab/pktgen/report"
)

// TestJoin: the hosts' views side by side: every node and interface once,
// each host's CPUs named HOST/cpuN with its softnet beside it (empty
// where the host listed none), the latest time and the longest interval,
// and why TCP lists nothing named with its host.
func TestJoin(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	a := &View{Time: t0, Interval: 0.2, Interfaces: []Interface{{Node: "client", Interface: "eth0"}}, Nodes: []Node{{Node: "client"}},
		CPU: []report.CPUUse{{CPU: "cpu0"}, {CPU: "cpu1"}}, Softnet: []report.SoftnetCPU{{CPU: 0, Dropped: 3}, {CPU: 1}}}
	b := &View{Time: t0.Add(time.Millisecond), Interval: 0.25, Interfaces: []Interface{{Node: "router", Interface: "eth0"}, {Node: "router", Interface: "eth1"}},
		Nodes: []Node{{Node: "router"}}, CPU: []report.CPUUse{{CPU: "cpu0"}}, NoTCP: "no sock_diag"}
	v := Join("lab1", []HostView{{"a", a}, {"b", b}})
	if v.Lab != "lab1" || !v.Time.Equal(t0.Add(time.Millisecond)) || v.Interval != 0.25 || len(v.Interfaces) != 3 || len(v.Nodes) != 2 {
		t.Errorf("joined: %+v", v)
	}
	if got := fmt.Sprintln(v.CPU[0].CPU, v.CPU[1].CPU, v.CPU[2].CPU); got != "a/cpu0 a/cpu1 b/cpu0\n" {
		t.Errorf("CPUs %s", got)
	}
	if len(v.Softnet) != 3 || v.Softnet[0].Dropped != 3 || v.Softnet[2] != (report.SoftnetCPU{CPU: 0}) {
		t.Errorf("softnet %+v", v.Softnet)
	}
	if v.NoTCP != "host b: no sock_diag" || v.TCP == nil {
		t.Errorf("TCP %v, %q", v.TCP, v.NoTCP)
	}
}
