package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/lab/state"
)

// TestStartupMarks runs a startup script with its prelude in bash, as a
// node runs it (here in the test's own namespaces: nothing it runs
// changes the machine), and reads the marks: every line runs although
// some fail, a line spread over several and a variable set before are
// the shell's, each failure is named by its line with its output, and
// the service lines of services nslab runs ask for them (of any
// spelling), while one it does not run runs as written and fails.
func TestStartupMarks(t *testing.T) {
	script := `X=hello
if [ "$X" = hello ]; then
  echo "$X from the if"
fi
false
echo after
systemctl start apache2
service bind9 restart
/etc/init.d/radvd start
sh -c 'echo oops >&2; exit 3'
systemctl start nslab-no-such-unit
f() { echo in f; }
f
`
	cmd := exec.Command("bash", "/dev/fd/3")
	sr, sw, _ := os.Pipe()
	pr, pw, _ := os.Pipe()
	cmd.ExtraFiles = []*os.File{sr, pr}
	cmd.Env = append(os.Environ(), "BASH_ENV=/dev/fd/4", "PATH=/nonexistent:"+os.Getenv("PATH"))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sr.Close()
	pr.Close()
	go func() { pw.WriteString(prelude(script)); pw.Close() }()
	go func() { sw.WriteString(script); sw.Close() }()
	_ = cmd.Wait() // the script's status is its last line's
	lines := readMarks(out.String())
	failed := map[int]int{}
	var services []string
	var printed []string
	for _, l := range lines {
		if l.failed {
			failed[l.line] = l.status
		}
		services = append(services, l.services...)
		printed = append(printed, l.output...)
	}
	if failed[5] != 1 || failed[10] != 3 || len(failed) != 3 {
		t.Errorf("failed lines %v, want 5 (false, 1), 10 (status 3) and 11 (systemctl of a unit nslab does not run)", failed)
	}
	if _, ok := failed[11]; !ok {
		t.Errorf("systemctl start nslab-no-such-unit did not fail: %v", failed)
	}
	if !slices.Equal(services, []string{"apache2", "bind9", "radvd"}) {
		t.Errorf("services asked for %q, want apache2, bind9, radvd", services)
	}
	for _, want := range []string{"hello from the if", "after", "oops", "in f"} {
		if !slices.Contains(printed, want) {
			t.Errorf("the script's output %q lacks %q", printed, want)
		}
	}
	for _, l := range lines {
		if l.line == 10 && !slices.Contains(l.output, "oops") {
			t.Errorf("line 10's output %q lacks what it printed", l.output)
		}
	}
}

// TestPrivilegedStartupScript: a node's startup script runs whole in the
// node, as Kathara runs a startup file: a line spread over several and a
// variable carried from one line to the next work, a failing line does
// not stop the rest and the deploy names it (line and output), and the
// service line of a service nslab runs (ssh, here: the host's sshd, in
// the node) starts the program in the node, which destroy stops. A
// strict deploy fails on the failing line and leaves nothing.
func TestPrivilegedStartupScript(t *testing.T) {
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Skip("no /usr/sbin/sshd: make deps installs openssh-server")
	}
	script := `ADDR=192.168.1.77/24
if ip link show veth2 >/dev/null; then
  ip address add "$ADDR" dev veth2
fi
ip route add 203.0.113.0/24 via 198.51.100.1
echo the line after the failure ran > /tmp/after
service ssh start
`
	lab := strings.Replace(pairYAML, "  ns2:\n", "  ns2:\n    startup:\n      - |\n"+indent(script, "        ")+"\n", 1)
	f := newFixture(t, lab)
	res, err := f.m.Deploy(context.Background(), f.lab)
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `line 5, "ip route add 203.0.113.0/24 via 198.51.100.1", exited 2`) || !strings.Contains(res.Warnings[0], "Nexthop has invalid gateway") {
		t.Errorf("warnings %q, want line 5 named with ip's words", res.Warnings)
	}
	out, err := exec.Command("ip", "-n", f.ns("ns2"), "-o", "addr", "show", "dev", "veth2").Output()
	if err != nil || !strings.Contains(string(out), "192.168.1.77/24") {
		t.Errorf("the if's body did not run with the variable set before it: %q %v", out, err)
	}
	st, err := f.m.loadState(f.lab.Name)
	if err != nil {
		t.Fatal(err)
	}
	var sshd state.ServiceRecord
	for _, s := range st.Services {
		if strings.HasPrefix(s.Command, "startup0: ") && strings.Contains(s.Command, "sshd -D") {
			sshd = s
		}
	}
	if sshd.PID == 0 || !deployed.Alive(sshd.PID, sshd.Start) {
		t.Fatalf("no sshd started for the script's service line: %+v", st.Services)
	}
	var a, b unix.Stat_t
	_ = unix.Stat("/proc/"+strconv.Itoa(sshd.PID)+"/ns/net", &a)
	_ = unix.Stat(f.m.netnsDir()+"/"+f.ns("ns2"), &b)
	if a.Ino == 0 || a.Ino != b.Ino {
		t.Errorf("sshd (pid %d) is not in ns2", sshd.PID)
	}
	if _, err := f.m.Destroy(f.lab.Name); err != nil {
		t.Fatal(err)
	}
	if deployed.Alive(sshd.PID, sshd.Start) {
		t.Errorf("sshd (pid %d) outlived the destroy", sshd.PID)
	}

	f.m.Strict = true
	_, err = f.m.Deploy(context.Background(), f.lab)
	if err == nil || !strings.Contains(err.Error(), "a strict deploy stops here") || !strings.Contains(err.Error(), "line 5") {
		t.Errorf("strict deploy: %v, want it to fail on line 5", err)
	}
	f.assertGone()
}

// indent puts prefix before every line of s.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}

// TestPrivilegedStartupServiceExits: a service a startup line starts that
// exits at once (sshd refusing its configuration) is that line failing,
// which in Kathara does not stop the lab: the deploy goes on and names the
// line and the program's words; a strict deploy fails and leaves nothing.
func TestPrivilegedStartupServiceExits(t *testing.T) {
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Skip("no /usr/sbin/sshd: make deps installs openssh-server")
	}
	node := "  ns2:\n    files:\n      /etc/ssh/sshd_config: \"NoSuchOption yes\\n\"\n    startup:\n      - |\n        echo first\n        service ssh start\n"
	lab := strings.Replace(pairYAML, "  ns2:\n", node, 1)
	f := newFixture(t, lab)
	res, err := f.m.Deploy(context.Background(), f.lab)
	if err != nil {
		t.Fatalf("deploy: %v, want the lab deployed with a warning", err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `line 2, "service ssh start"`) || !strings.Contains(res.Warnings[0], "exited at once") || !strings.Contains(res.Warnings[0], "NoSuchOption") {
		t.Errorf("warnings %q, want line 2 named with sshd's words", res.Warnings)
	}
	if _, err := f.m.Destroy(f.lab.Name); err != nil {
		t.Fatal(err)
	}
	f.m.Strict = true
	_, err = f.m.Deploy(context.Background(), f.lab)
	if err == nil || !strings.Contains(err.Error(), "exited at once") || !strings.Contains(err.Error(), "NoSuchOption") {
		t.Errorf("strict deploy: %v, want it to fail on the service", err)
	}
	f.assertGone()
}

// TestPrivilegedStartupNetworking: Debian's networking restart, in each
// of the forms Kathara's startup files write it, applies the node's own
// /etc/network/interfaces with ifupdown (an address, and an up line's
// route), in the node and nowhere else.
func TestPrivilegedStartupNetworking(t *testing.T) {
	if _, err := exec.LookPath("ifup"); err != nil {
		t.Skip("no ifup: make deps installs ifupdown")
	}
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash, which runs startup scripts (the VM's root has none; the host's run covers this test)")
	}
	hostState, _ := os.ReadFile("/run/network/ifstate")
	iface := func(dev, addr string) string {
		return fmt.Sprintf(`"auto %s\niface %s inet static\n  address %s\n  up ip route add 203.0.113.0/24 dev %s\n"`, dev, dev, addr, dev)
	}
	lab := strings.Replace(pairYAML, "  ns1:\n", "  ns1:\n    files:\n      /etc/network/interfaces: "+iface("veth1", "10.77.0.1/24")+"\n    startup: [\"/etc/init.d/networking restart\\n\"]\n", 1)
	lab = strings.Replace(lab, "  ns2:\n", "  ns2:\n    files:\n      /etc/network/interfaces: "+iface("veth2", "10.77.0.2/24")+"\n    startup: [\"echo before\\nsystemctl restart networking\\n\"]\n", 1)
	f := newFixture(t, lab)
	res, err := f.m.Deploy(context.Background(), f.lab)
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings: %q", res.Warnings)
	}
	for node, addr := range map[string]string{"ns1:veth1": "10.77.0.1/24", "ns2:veth2": "10.77.0.2/24"} {
		name, dev, _ := strings.Cut(node, ":")
		out, err := exec.Command("ip", "-n", f.ns(name), "-o", "addr", "show", "dev", dev).Output()
		if err != nil || !strings.Contains(string(out), addr) {
			t.Errorf("%s: %s not applied from the node's interfaces file: %q %v", node, addr, out, err)
		}
		out, err = exec.Command("ip", "-n", f.ns(name), "route", "show", "203.0.113.0/24").Output()
		if err != nil || !strings.Contains(string(out), "dev "+dev) {
			t.Errorf("%s: the up line's route is missing: %q %v", node, out, err)
		}
	}
	if now, _ := os.ReadFile("/run/network/ifstate"); string(now) != string(hostState) {
		t.Errorf("the host's ifupdown state changed: %q, was %q", now, hostState)
	}
}

// TestPrivilegedNodeWebRoot: a node with files under /var/www has that
// directory as its own overlay: it sees its page over the host's, and a
// startup line that changes the directory (chmod 700 /var/www, as web
// labs write) changes the node's copy, never the host's.
func TestPrivilegedNodeWebRoot(t *testing.T) {
	before, err := os.Stat("/var/www")
	if err != nil {
		t.Skip("no /var/www on this machine: make deps installs apache2, which makes it")
	}
	lab := strings.Replace(pairYAML, "  ns2:\n", "  ns2:\n    files:\n      /var/www/nslab-test.html: \"the node's page\\n\"\n    startup: [\"chmod 700 /var/www\\n\"]\n", 1)
	f := newFixture(t, lab)
	if _, err := f.m.Deploy(context.Background(), f.lab); err != nil {
		t.Fatalf("deploy: %v", err)
	}
	out, err := exec.Command("nsenter", "--mount="+f.m.labViews(f.lab.Name)+"/"+f.ns("ns2")+".mnt", "sh", "-c", "cat /var/www/nslab-test.html; stat -c %a /var/www").CombinedOutput()
	if err != nil || string(out) != "the node's page\n700\n" {
		t.Errorf("in the node: %q %v, want its page and mode 700", out, err)
	}
	after, err := os.Stat("/var/www")
	if err != nil || after.Mode() != before.Mode() {
		t.Errorf("the host's /var/www changed: %v, was %v (%v)", after.Mode(), before.Mode(), err)
	}
	if _, err := os.Stat("/var/www/nslab-test.html"); err == nil {
		t.Errorf("the node's page landed in the host's /var/www")
	}
}

// TestPrivilegedStartupServiceRestarts: node stop stops the service a
// startup line started (sshd, for service ssh start), and node start
// starts it again, in the node, as deploy did; the script does not run
// again.
func TestPrivilegedStartupServiceRestarts(t *testing.T) {
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Skip("no /usr/sbin/sshd: make deps installs openssh-server")
	}
	lab := strings.Replace(pairYAML, "  ns2:\n", "  ns2:\n    startup: [\"echo ran >> /tmp/runs\\nservice ssh start\\n\"]\n", 1)
	f := newFixture(t, lab)
	if _, err := f.m.Deploy(context.Background(), f.lab); err != nil {
		t.Fatalf("deploy: %v", err)
	}
	sshd := func() state.ServiceRecord {
		t.Helper()
		st, err := f.m.loadState(f.lab.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range st.Services {
			if s.Node == "ns2" && s.Service == "ssh" {
				return s
			}
		}
		return state.ServiceRecord{}
	}
	first := sshd()
	if first.PID == 0 || !deployed.Alive(first.PID, first.Start) {
		t.Fatalf("no sshd after deploy: %+v", first)
	}
	if err := f.m.StopNode(f.lab.Name, "ns2"); err != nil {
		t.Fatal(err)
	}
	if deployed.Alive(first.PID, first.Start) {
		t.Errorf("sshd (pid %d) outlived node stop", first.PID)
	}
	if err := f.m.StartNode(context.Background(), f.lab.Name, "ns2"); err != nil {
		t.Fatal(err)
	}
	again := sshd()
	if again.PID == 0 || again.PID == first.PID || !deployed.Alive(again.PID, again.Start) {
		t.Fatalf("node start did not start sshd again: %+v (first %+v)", again, first)
	}
	var a, b unix.Stat_t
	_ = unix.Stat("/proc/"+strconv.Itoa(again.PID)+"/ns/net", &a)
	_ = unix.Stat(f.m.netnsDir()+"/"+f.ns("ns2"), &b)
	if a.Ino == 0 || a.Ino != b.Ino {
		t.Errorf("the new sshd (pid %d) is not in ns2", again.PID)
	}
	out, err := exec.Command("nsenter", "--mount="+f.m.labViews(f.lab.Name)+"/"+f.ns("ns2")+".mnt", "cat", "/tmp/runs").CombinedOutput()
	if err != nil || string(out) != "ran\n" {
		t.Errorf("the script's runs: %q %v, want one", out, err)
	}
}
