// Package programs knows what a node's command lines need of the host:
// the programs they run (read from the lines as a shell parses them, with
// mvdan.cc/sh, so that pipes, lists, if/while bodies and subshells are
// seen, and names a line defines as functions or reaches through a
// variable are not taken for programs), the Debian package that brings
// each, and the services that Kathara's images start from their startup
// lines (systemctl start X, service X start, /etc/init.d/X start), with
// the program nslab runs for each in the node instead.
//
// It touches nothing: Missing looks programs up on the host's file
// system, in the calling process's mount namespace.
package programs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Commands are the programs line runs, in order, each once: the first
// word of every simple command that is a literal, and the command a
// wrapper runs (sudo, env, nohup, timeout, exec, command, nice, setsid,
// stdbuf, ip netns exec NS). Shell builtins and keywords, and names line
// defines as functions, are left out. A line the shell cannot parse is
// an error, with the shell's words.
func Commands(line string) ([]string, error) {
	cmds, err := CommandsAt(line)
	var out []string
	for _, c := range cmds {
		out = append(out, c.Name)
	}
	return out, err
}

// Command is a program a script runs, at the first line that runs it.
type Command struct {
	Name string
	Line int
}

// CommandsAt is Commands of a script of any number of lines, each
// program with the first line that runs it.
func CommandsAt(script string) ([]Command, error) {
	var out []Command
	funcs, err := eachCommand(script, func(words []string, line int) {
		if !slices.ContainsFunc(out, func(c Command) bool { return c.Name == words[0] }) {
			out = append(out, Command{Name: words[0], Line: line})
		}
	})
	return slices.DeleteFunc(out, func(c Command) bool { return c.Name == "" || funcs[c.Name] || builtins[c.Name] }), err
}

// eachCommand parses script as bash does and calls fn with the literal
// words of every command it runs, at its line: each simple command, and
// again the command each wrapper in it runs (sudo, env, ip netns exec,
// ...: see wrapped), from that command's name on. It returns the names
// the script defines as functions. A script the shell cannot parse is an
// error, with the shell's words.
func eachCommand(script string, fn func(words []string, line int)) (map[string]bool, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	funcs := map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.FuncDecl:
			if n.Name != nil {
				funcs[n.Name.Value] = true
			}
		case *syntax.CallExpr:
			for words := literals(n.Args); len(words) > 0; words = wrapped(words[0], words[1:]) {
				fn(words, int(n.Pos().Line()))
			}
		}
		return true
	})
	return funcs, nil
}

// literals are the words of args up to the first that is not a literal
// (a variable, a command substitution): what follows it is not known.
func literals(args []*syntax.Word) []string {
	var out []string
	for _, w := range args {
		s := w.Lit()
		if s == "" {
			if lit, ok := quoted(w); ok {
				s = lit
			} else {
				break
			}
		}
		out = append(out, s)
	}
	return out
}

// quoted is the word's text when it is a quoted literal ('x', "x").
func quoted(w *syntax.Word) (string, bool) {
	if len(w.Parts) != 1 {
		return "", false
	}
	switch p := w.Parts[0].(type) {
	case *syntax.SglQuoted:
		return p.Value, true
	case *syntax.DblQuoted:
		if len(p.Parts) == 1 {
			if l, ok := p.Parts[0].(*syntax.Lit); ok {
				return l.Value, true
			}
		}
	}
	return "", false
}

// wrapped is the command line a wrapper program runs (its words from the
// command's name on), or nil when name runs none.
func wrapped(name string, args []string) []string {
	skipOpts := func(args []string, withValue map[string]bool) []string {
		for len(args) > 0 && strings.HasPrefix(args[0], "-") {
			if withValue[args[0]] && len(args) > 1 {
				args = args[1:]
			}
			args = args[1:]
		}
		return args
	}
	switch filepath.Base(name) {
	case "sudo", "nohup", "exec", "command", "setsid", "stdbuf", "nice":
		args = skipOpts(args, map[string]bool{"-u": true, "-g": true, "-n": true})
	case "env":
		args = skipOpts(args, map[string]bool{"-u": true})
		for len(args) > 0 && strings.Contains(args[0], "=") {
			args = args[1:]
		}
	case "timeout":
		args = skipOpts(args, map[string]bool{"-s": true, "-k": true})
		if len(args) > 0 {
			args = args[1:] // the duration
		}
	case "ip":
		// ip [-n NS] netns exec NS CMD
		if i := slices.Index(args, "netns"); i >= 0 && i+3 < len(args) && args[i+1] == "exec" {
			return args[i+3:]
		}
		return nil
	default:
		return nil
	}
	if len(args) == 0 {
		return nil
	}
	return args
}

// builtins are bash's builtins and keywords that can stand first in a
// simple command: no program of the host's.
var builtins = map[string]bool{}

func init() {
	for _, b := range strings.Fields(`. : [ alias bg bind break builtin caller cd command compgen complete
		compopt continue declare dirs disown echo enable eval exec exit export false fc fg getopts hash
		help history jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly
		return set shift shopt source suspend test times trap true type typeset ulimit umask unalias
		unset wait`) {
		builtins[b] = true
	}
	// exec, command run what follows: wrapped looks at them; they are
	// builtins themselves.
}

// Service is a service that Kathara's images start from a startup line,
// as nslab runs it: Run, a command line that keeps the program in the
// foreground in the node (nslab supervises it like a run: line and stops
// it with the lab), Program, what it needs of the host, and Package, the
// Debian package that brings it.
type Service struct {
	Name    string
	Program string
	Package string
	Run     string
}

// services are the services nslab runs for a service line, by the names
// a line may call them.
var services = map[string]Service{
	"apache2": {Program: "apache2ctl", Package: "apache2",
		Run: "mkdir -p /var/log/apache2 /run/lock && exec apache2ctl -D FOREGROUND"},
	"nginx": {Program: "nginx", Package: "nginx",
		Run: "mkdir -p /var/log/nginx && exec nginx -g 'daemon off;'"},
	"radvd": {Program: "radvd", Package: "radvd",
		Run: "exec radvd --nodaemon --config /etc/radvd.conf --pidfile /run/radvd.pid"},
	"ssh": {Program: "/usr/sbin/sshd", Package: "openssh-server",
		Run: "mkdir -p /run/sshd && exec /usr/sbin/sshd -D"},
	// named's working directory is the node's own (a view's private
	// /var/cache/bind, see ns.PrivateDirs), never the host's.
	"bind9": {Program: "named", Package: "bind9",
		Run: "mkdir -p /run/named && chown bind:bind /run/named /var/cache/bind; exec named -g -u bind"},
	"dnsmasq": {Program: "dnsmasq", Package: "dnsmasq",
		Run: "exec dnsmasq --keep-in-foreground --pid-file=/run/dnsmasq.pid"},
}

// aliases are other names of the services.
var aliases = map[string]string{"httpd": "apache2", "sshd": "ssh", "named": "bind9"}

// serviceLine is a line that starts a service and does nothing else:
// systemctl start|restart X, systemctl enable --now X, service X
// start|restart, /etc/init.d/X start|restart.
var serviceLine = regexp.MustCompile(`^\s*(?:systemctl\s+(?:start|restart|enable\s+--now)\s+([A-Za-z0-9@._-]+?)(?:\.service)?|service\s+([A-Za-z0-9@._-]+)\s+(?:start|restart)|/etc/init\.d/([A-Za-z0-9@._-]+)\s+(?:start|restart))\s*;?\s*$`)

// ServiceOf is the service line starts, when it is a service line:
// known says whether nslab knows how to run it (else it is named, and the
// line runs as written).
func ServiceOf(line string) (name string, s Service, known bool) {
	m := serviceLine.FindStringSubmatch(line)
	if m == nil {
		return "", Service{}, false
	}
	name = m[1] + m[2] + m[3]
	key := name
	if a, ok := aliases[key]; ok {
		key = a
	}
	s, known = services[key]
	s.Name = key
	return name, s, known
}

// Names are every name a service line may give a service nslab runs
// (KnownServices and their aliases), sorted.
func Names() []string {
	out := KnownServices()
	for a := range aliases {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// KnownServices are the services nslab runs for a service line, sorted.
func KnownServices() []string {
	var out []string
	for k := range services {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// packages are the Debian packages of programs a lab's lines run (the
// package of Debian 12 and 13 that puts the program on the PATH).
var packages = map[string]string{
	"iptables": "iptables", "ip6tables": "iptables", "iptables-legacy": "iptables", "iptables-save": "iptables", "iptables-restore": "iptables",
	"ip6tables-legacy": "iptables", "iptables-nft": "iptables", "ebtables": "ebtables", "arptables": "arptables",
	"nft": "nftables", "brctl": "bridge-utils", "ifconfig": "net-tools", "route": "net-tools", "arp": "net-tools",
	"netstat": "net-tools", "ip": "iproute2", "tc": "iproute2", "bridge": "iproute2", "ss": "iproute2",
	"ethtool": "ethtool", "tcpdump": "tcpdump", "ping": "iputils-ping", "ping6": "iputils-ping",
	"traceroute": "traceroute", "tracepath": "iputils-tracepath", "arping": "iputils-arping",
	"mtr": "mtr-tiny", "dig": "bind9-dnsutils", "nslookup": "bind9-dnsutils", "host": "bind9-host",
	"named": "bind9", "rndc": "bind9", "named-checkconf": "bind9-utils", "apache2": "apache2",
	"apache2ctl": "apache2", "a2enmod": "apache2", "a2ensite": "apache2", "a2dissite": "apache2",
	"nginx": "nginx", "radvd": "radvd", "radvdump": "radvd", "dnsmasq": "dnsmasq",
	"sshd": "openssh-server", "/usr/sbin/sshd": "openssh-server", "ssh": "openssh-client", "scp": "openssh-client",
	"curl": "curl", "wget": "wget", "w3m": "w3m", "lynx": "lynx", "links": "links", "nc": "netcat-openbsd",
	"netcat": "netcat-openbsd", "socat": "socat", "iperf": "iperf", "iperf3": "iperf3", "hping3": "hping3",
	"nmap": "nmap", "telnet": "telnet", "ftp": "ftp", "dhclient": "isc-dhcp-client", "dhcpd": "isc-dhcp-server",
	"ovs-vsctl": "openvswitch-switch", "ovs-ofctl": "openvswitch-switch", "ovs-vswitchd": "openvswitch-switch",
	"ovsdb-server": "openvswitch-switch", "ipsec": "strongswan-starter", "swanctl": "strongswan-swanctl",
	"charon": "strongswan-charon", "openvpn": "openvpn", "wg": "wireguard-tools", "vtysh": "frr", "zebra": "frr",
	"bird": "bird2", "birdc": "bird2", "python3": "python3", "python": "python-is-python3", "perl": "perl-base",
	"vconfig": "vlan", "ifup": "ifupdown", "ifdown": "ifupdown", "ifquery": "ifupdown", "sysctl": "procps",
	"ps": "procps", "kill": "procps", "killall": "psmisc", "pkill": "procps", "mount": "mount", "modprobe": "kmod",
	"conntrack": "conntrack", "ipset": "ipset", "keepalived": "keepalived", "haproxy": "haproxy",
	"squid": "squid", "snmpd": "snmpd", "snmpwalk": "snmp", "vsftpd": "vsftpd", "xinetd": "xinetd",
	"pimd": "pimd", "smcroute": "smcroute", "mrouted": "mrouted", "lldpd": "lldpd", "lldpcli": "lldpd",
	"ndisc6": "ndisc6", "rdisc6": "ndisc6", "tshark": "tshark", "nping": "nmap", "ab": "apache2-utils",
	"htpasswd": "apache2-utils", "jq": "jq", "sed": "sed", "awk": "mawk", "grep": "grep", "bash": "bash",
	"chmod": "coreutils", "chown": "coreutils", "cp": "coreutils", "mv": "coreutils", "mkdir": "coreutils",
	"cat": "coreutils", "touch": "coreutils", "ln": "coreutils", "rm": "coreutils", "sleep": "coreutils",
	"hostname": "hostname", "systemctl": "systemd", "service": "init-system-helpers",
}

// Package is the Debian package that brings program ("": none known).
func Package(program string) string {
	if p, ok := packages[program]; ok {
		return p
	}
	return packages[filepath.Base(program)]
}

// path is where a node's command lines find programs: the usual PATH of
// a root shell on Debian.
var path = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// Found reports whether program is on this machine: a path names a file
// that exists, a name one in the PATH of a root shell.
func Found(program string) bool {
	if strings.Contains(program, "/") {
		_, err := os.Stat(program)
		return err == nil
	}
	for _, d := range path {
		if st, err := os.Stat(filepath.Join(d, program)); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// Missing is a program a lab needs that this machine lacks, and where
// the lab needs it.
type Missing struct {
	Program string
	Package string   // "": none known
	Where   []string // what needs it: "node r1's exec line 3", ...
}

func (m Missing) String() string {
	pkg := "no Debian package nslab knows of brings it"
	if m.Package != "" {
		pkg = "Debian's package " + m.Package
	}
	where := m.Where
	if len(where) > 2 {
		where = append(where[:2:2], fmt.Sprintf("%d more", len(m.Where)-2))
	}
	return fmt.Sprintf("%s (%s), which %s run", m.Program, pkg, strings.Join(where, " and "))
}

// InstallCommand is the command that installs what missing names of
// Debian's ("": none of them is known).
func InstallCommand(missing []Missing) string {
	var pkgs []string
	for _, m := range missing {
		if m.Package != "" && !slices.Contains(pkgs, m.Package) {
			pkgs = append(pkgs, m.Package)
		}
	}
	if len(pkgs) == 0 {
		return ""
	}
	sort.Strings(pkgs)
	return "apt-get install " + strings.Join(pkgs, " ")
}
