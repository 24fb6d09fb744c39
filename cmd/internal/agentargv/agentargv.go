// Package agentargv spells an agent's request as nslab's command line:
// the protocol's stand-ins (fleet.FileArg is already the file's path;
// fleet.NameArg, QuietArg, RemoteArg, JSONArg, StrictArg, OwnerArg) as
// nslab's flags.
// nslab agent (over SSH) and nslab-kube agent (on Kubernetes) both run
// their host's share with it, so a stand-in is spelled in one place.
package agentargv

import (
	"slices"
	"strings"

	"github.com/nslab/nslab/topology/fleet"
)

// OtherHostsFlag is bench's hidden flag that reads the path's hops on
// other hosts through the agent (fleet.RemoteArg).
const OtherHostsFlag = "other-hosts"

// Spell is the command line that runs args on host's share of lab
// labName: the global options, --width 0, --host, and the arguments with
// the stand-ins spelled as flags. What a host's verb prints goes back to
// the coordinator, which folds it for the person reading (--width 0: the
// host's nslab folds nothing, so nothing is folded twice or at another
// width).
func Spell(global []string, host, labName string, args []string) []string {
	argv := append(slices.Clone(global), "--width", "0", "--host", host)
	for _, s := range args {
		switch s {
		case fleet.NameArg:
			argv = append(argv, "--name", labName)
		case fleet.QuietArg:
			argv = append(argv, "-q")
		case fleet.RemoteArg:
			argv = append(argv, "--"+OtherHostsFlag)
		case fleet.JSONArg:
			argv = append(argv, "--format", "json")
		case fleet.StrictArg:
			argv = append(argv, "--strict")
		default:
			if owner, ok := strings.CutPrefix(s, fleet.OwnerArg); ok {
				argv = append(argv, "--owner", owner)
				continue
			}
			argv = append(argv, s)
		}
	}
	return argv
}
