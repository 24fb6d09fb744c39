package programs

import (
	"reflect"
	"testing"
)

// TestKernelNeeds: tc's qdisc lines and ip's link and tunnel lines name
// the feature they ask for, through wrappers, options and shell syntax;
// other lines ask for none.
func TestKernelNeeds(t *testing.T) {
	script := `tc qdisc add dev eth0 root netem delay 100ms
if true; then ip -n x link add bond0 type bond mode 802.3ad; fi
ip tunnel add tun0 mode ipip remote 1.2.3.4 local 5.6.7.8
sudo tc qdisc replace dev eth1 root handle 1: htb default 10
ip link set eth0 up
tc qdisc del dev eth0 root netem
ip link add link eth0 name eth0.10 type vlan id 10
ip tunnel add t1 remote 1.1.1.1
tc qdisc add dev eth0 root netem loss 1%
echo tc qdisc add dev eth0 root cake
`
	got, err := KernelNeeds(script)
	if err != nil {
		t.Fatal(err)
	}
	want := []KernelNeed{{"qdisc", "netem", 1}, {"link", "bond", 2}, {"link", "ipip", 3}, {"qdisc", "htb", 4}, {"link", "vlan", 7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("KernelNeeds = %+v, want %+v", got, want)
	}
	if _, err := KernelNeeds("if then"); err == nil {
		t.Errorf("a script the shell cannot parse gave no error")
	}
}
