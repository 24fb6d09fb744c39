package programs

import (
	"path/filepath"
	"slices"
	"strings"
)

// KernelNeed is a kernel feature a command line asks for: a queueing
// discipline (tc qdisc add ... netem) or a kind of network device (ip
// link add ... type bond, ip tunnel add ... mode ipip), at the first line
// that asks for it.
type KernelNeed struct {
	What string // "qdisc" or "link"
	Kind string // netem, htb, ...; ipip, gre, bond, vlan, vxlan, ...
	Line int
}

// qdiscKind is the kind of qdisc tc qdisc add's arguments name (after
// add): the first word that is not one of the qdisc's place (dev DEV,
// root, parent ID, handle ID, estimator A B, the blocks, stab's options);
// "" for none.
func qdiscKind(args []string) string {
	skip := map[string]int{"dev": 1, "parent": 1, "handle": 1, "root": 0, "estimator": 2, "ingress_block": 1, "egress_block": 1,
		"stab": 0, "mtu": 1, "tsize": 1, "mpu": 1, "overhead": 1, "linklayer": 1}
	for i := 0; i < len(args); i++ {
		n, ok := skip[args[i]]
		if !ok {
			return args[i]
		}
		i += n
	}
	return ""
}

// tunnelModes are ip tunnel's modes, as the kind of device each makes.
var tunnelModes = map[string]string{"ipip": "ipip", "gre": "gre", "sit": "sit", "vti": "vti", "isatap": "sit",
	"ip6ip6": "ip6tnl", "ipip6": "ip6tnl", "any": "ip6tnl", "ip6gre": "ip6gre", "vti6": "vti6"}

// KernelNeeds are the kernel features script (a command line, or a
// startup script of any number of lines) asks for, each once, read as
// the shell parses it: tc's qdisc lines, ip link add's type and ip
// tunnel add's mode (ip's options, -n NS among them, skipped). A script
// the shell cannot parse is an error, with the shell's words.
func KernelNeeds(script string) ([]KernelNeed, error) {
	var out []KernelNeed
	_, err := eachCommand(script, func(words []string, line int) {
		what, kind := kernelNeed(filepath.Base(words[0]), words[1:])
		if kind != "" && !slices.ContainsFunc(out, func(k KernelNeed) bool { return k.What == what && k.Kind == kind }) {
			out = append(out, KernelNeed{What: what, Kind: kind, Line: line})
		}
	})
	return out, err
}

// kernelNeed is the feature one ip or tc command asks for ("" kind:
// none): cmd is the program's name, args what follows it.
func kernelNeed(cmd string, args []string) (what, kind string) {
	args = skipIPOptions(args)
	if len(args) < 2 || !slices.Contains([]string{"add", "a", "replace", "change", "create"}, args[1]) {
		return "", ""
	}
	switch {
	case cmd == "tc" && strings.HasPrefix("qdisc", args[0]) && len(args[0]) >= 2:
		return "qdisc", qdiscKind(args[2:])
	case cmd == "ip" && len(args[0]) >= 1 && strings.HasPrefix("link", args[0]):
		if i := slices.Index(args, "type"); i >= 0 && i+1 < len(args) {
			return "link", args[i+1]
		}
	case cmd == "ip" && len(args[0]) >= 3 && strings.HasPrefix("tunnel", args[0]):
		if i := slices.Index(args, "mode"); i >= 0 && i+1 < len(args) && tunnelModes[args[i+1]] != "" {
			return "link", tunnelModes[args[i+1]]
		}
		return "link", "ipip" // ip tunnel's default mode
	}
	return "", ""
}

// skipIPOptions drops ip's and tc's options before the object (-6, -n
// NS, -netns NS, -b FILE, ...).
func skipIPOptions(args []string) []string {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-n", "-netns", "-b", "-batch", "-rc", "-rcvbuf", "-l", "-loops", "-f", "-family":
			if len(args) > 1 {
				args = args[1:]
			}
		}
		args = args[1:]
	}
	return args
}
