// Package rootless runs nslab's labs for a user without root. The labs
// live in namespaces the user owns: a user namespace that maps the user to
// root, and with it a mount, a network and a PID namespace. A process of
// nslab's, the holder, makes them and keeps them alive (as rootlesskit's
// child or `unshare -Urmnp --fork` does); every nslab command that works
// on labs is run again inside them with nsenter(1) (Go cannot join a user
// namespace once it has threads; dockerd-rootless enters its namespaces the
// same way), and the holder is stopped when the last lab is destroyed, which
// ends every namespace and process of the labs with it.
//
// Inside, /run is a tmpfs of the holder's (the labs' /run/netns is there:
// nothing of the host's /run is written), and /run/nslab, nslab's state
// directory, is the directory state under the user's own (Dir), where the
// user, and the command that decides whether to stop the holder, see the
// labs' state files from outside.
//
// The host is never changed: the labs' network namespaces belong to the
// holder's user namespace and are named only in its mount namespace, so
// no veth or address ever appears on the host. What needs the host's
// root is refused by the commands (see Active): kernel pktgen, BPF,
// SR-IOV, tunnels to other hosts and writes to the machine's own
// settings.
package rootless

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nslab/nslab/topology/lab/state"
	"golang.org/x/sys/unix"
)

// envInside marks a command running inside the holder's namespaces.
const envInside = "NSLAB_ROOTLESS"

// Inside reports whether environment variable lookup says this process
// is an nslab command running inside a rootless lab's namespaces, where
// the host's root is not to be had (cmd asks once, with os.LookupEnv).
func Inside(lookup func(string) (string, bool)) bool {
	v, ok := lookup(envInside)
	return ok && v != ""
}

// ErrNeedsRoot is wrapped by the refusals of what a rootless lab cannot
// have.
var ErrNeedsRoot = errors.New("needs root on the host")

// ErrUnavailable is returned by Run when this machine gives the user no
// namespaces of their own; nothing was started.
var ErrUnavailable = errors.New("rootless labs are not available here")

// Refuse is the one-line refusal of what (a feature, named as the user
// wrote it) in a rootless lab: why, and what to do instead.
func Refuse(what, instead string) error {
	return fmt.Errorf("%s %w, and this lab is rootless (nslab runs as uid %d): %s", what, ErrNeedsRoot, hostUID(), instead)
}

// hostUID is this process's uid as the host sees it: inside the holder's
// user namespace it is root, mapped from the user's (/proc/self/uid_map:
// "0 UID 1").
func hostUID() int {
	data, err := os.ReadFile("/proc/self/uid_map")
	if err == nil {
		f := strings.Fields(string(data))
		if len(f) == 3 && f[0] == strconv.Itoa(os.Getuid()) {
			if uid, err := strconv.Atoi(f[1]); err == nil {
				return uid
			}
		}
	}
	return os.Getuid()
}

// Unplaced is why a rootless lab goes without its nodes' CPU placement
// (spec.Lab.Unplace): rps_cpus and the affinity of NAPI threads are the
// host root's to write.
const Unplaced = "placing a node's receive work on CPUs (rps_cpus, NAPI threads) needs root on the host, and this lab is rootless"

// Wanted reports whether a command should run rootless: asked for with
// --rootless, or run by a user other than root.
func Wanted(asked bool) bool { return asked || os.Geteuid() != 0 }

// Dir is the user's directory of rootless state: $XDG_RUNTIME_DIR/nslab,
// or /tmp/nslab-UID where there is no runtime directory (su without a
// login session). It is created with mode 0700; one that exists must be
// the user's own directory and no link, so another user cannot plant it.
func Dir() (string, error) {
	base := os.Getenv("XDG_RUNTIME_DIR")
	var dir string
	if base != "" && filepath.IsAbs(base) {
		dir = filepath.Join(base, "nslab")
	} else {
		dir = filepath.Join(os.TempDir(), "nslab-"+strconv.Itoa(os.Getuid()))
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("rootless state directory: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return "", fmt.Errorf("rootless state directory: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Getuid() || st.Mode&0o077 != 0 {
		return "", fmt.Errorf("rootless state directory %s is not a directory of uid %d with mode 0700: remove it, or set XDG_RUNTIME_DIR to a directory of yours", dir, os.Getuid())
	}
	return dir, nil
}

// stateDir is where the labs' state files are, under dir; the holder binds
// it on /run/nslab.
func stateDir(dir string) string { return filepath.Join(dir, "state") }

// labs lists the labs a user's holder keeps (their state files under dir).
func labs(dir string) ([]string, error) { return state.Labs(stateDir(dir)) }
