package programs

import (
	"slices"
	"testing"
)

// TestCommands: the programs a line runs, as a shell parses it: pipes,
// lists, if and loop bodies, subshells and wrappers seen; builtins,
// functions the line defines and words behind a variable left out.
func TestCommands(t *testing.T) {
	for line, want := range map[string][]string{
		"ip address add 10.0.0.1/24 dev eth0":                          {"ip"},
		"brctl addbr b0 && brctl addif b0 eth0 || echo no":             {"brctl"},
		"if [ -x /usr/sbin/x ]; then iptables -F; fi; cat /x | grep y": {"iptables", "cat", "grep"},
		"for i in 1 2; do ping -c1 10.0.0.$i; done":                    {"ping"},
		"(cd /tmp && tcpdump -w x.pcap) &":                             {"tcpdump"},
		"f() { ovs-vsctl show; }; f":                                   {"ovs-vsctl"},
		"$CMD --flag; sudo -u nobody env A=1 nohup iperf3 -s":          {"sudo", "env", "nohup", "iperf3"},
		"timeout 5 ip netns exec x w3m http://a":                       {"timeout", "ip", "w3m"},
		"export A=1; echo $A > /etc/x; source /etc/y; . /etc/z":        nil,
		"/etc/init.d/zebra start":                                      {"/etc/init.d/zebra"},
		"echo \"$(hostname)\"":                                         {"hostname"},
	} {
		got, err := Commands(line)
		if err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: %q, want %q", line, got, want)
		}
	}
	if _, err := Commands("if then fi ("); err == nil {
		t.Error("a line the shell cannot parse: no error")
	}
}

// TestServiceOf: the service lines Kathara's images run, by each of
// their spellings, and nothing else.
func TestServiceOf(t *testing.T) {
	for line, want := range map[string]string{
		"systemctl start apache2":           "apache2",
		"systemctl restart apache2.service": "apache2",
		"systemctl enable --now nginx":      "nginx",
		"service bind9 start":               "bind9",
		"/etc/init.d/apache2 start ":        "apache2",
		"/etc/init.d/radvd restart;":        "radvd",
		"systemctl start named":             "bind9",
		"service ssh start":                 "ssh",
	} {
		name, s, known := ServiceOf(line)
		if !known || s.Name != want || name == "" || s.Run == "" || s.Package == "" {
			t.Errorf("%q: %q %+v known %v, want service %s", line, name, s, known, want)
		}
	}
	if name, _, known := ServiceOf("systemctl start openvswitch-switch"); known || name != "openvswitch-switch" {
		t.Errorf("a service nslab does not run: %q known %v, want it named and not known", name, known)
	}
	for _, line := range []string{"systemctl status apache2", "service apache2 start && echo x", "apache2ctl start", "systemctl stop frr"} {
		if name, _, _ := ServiceOf(line); name != "" {
			t.Errorf("%q is no service line, taken for %q", line, name)
		}
	}
}

// TestPackage: the Debian package of the programs Kathara's labs run
// that a host often lacks.
func TestPackage(t *testing.T) {
	for prog, want := range map[string]string{
		"brctl": "bridge-utils", "iptables-legacy": "iptables", "/usr/sbin/iptables": "iptables", "named": "bind9",
		"apache2ctl": "apache2", "radvd": "radvd", "ovs-vsctl": "openvswitch-switch", "w3m": "w3m", "/usr/lib/frr/zebra": "frr",
		"no-such-program": "",
	} {
		if got := Package(prog); got != want {
			t.Errorf("Package(%s) = %q, want %q", prog, got, want)
		}
	}
	m := []Missing{{Program: "brctl", Package: "bridge-utils"}, {Program: "x"}, {Program: "iptables", Package: "iptables"}, {Program: "ip6tables", Package: "iptables"}}
	if got := InstallCommand(m); got != "apt-get install bridge-utils iptables" {
		t.Errorf("InstallCommand = %q", got)
	}
}
