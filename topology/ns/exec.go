package ns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Exec replaces the current process with argv run inside n, the way
// `ip netns exec NAME CMD...` does: the network namespace is joined, a private
// mount namespace is made so that a fresh sysfs can be mounted on /sys (so
// /sys/class/net shows the namespace's interfaces), and files under
// /etc/netns/NAME are bind-mounted over their /etc counterparts. It only
// returns on error; on success the command's exit code becomes the process's.
func (n *NS) Exec(argv []string, env []string) error { return n.ExecIn(nil, argv, env) }

// ExecIn is Exec in node view v (see View); a nil v is Exec.
//
// Equivalent to: exec nsenter --net=NETNS --mount=VIEW.mnt --uts=VIEW.uts CMD...
func (n *NS) ExecIn(v *View, argv []string, env []string) error {
	if len(argv) == 0 {
		return errors.New("exec: no command given")
	}
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("exec %s: %w", argv[0], err)
	}
	runtime.LockOSThread()
	// Never unlocked: on failure the process is about to exit anyway, and on
	// success the process image is replaced.
	return n.enterForExec(v, func() error { return syscall.Exec(bin, argv, env) })
}

// remountSys mounts a sysfs that belongs to the current network namespace on
// /sys, as iproute2 does: sysfs shows the namespace of whoever mounts it.
func remountSys() error {
	if err := unix.Unmount("/sys", unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmount /sys: %w", err)
	}
	if err := unix.Mount("sysfs", "/sys", "sysfs", 0, ""); err != nil {
		// As iproute2: a read-only sysfs is still better than the host's view.
		if err := unix.Mount("sysfs", "/sys", "sysfs", unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("mount sysfs on /sys: %w", err)
		}
	}
	return nil
}

// bindEtc bind-mounts /etc/netns/NAME/* over /etc/*, as `ip netns exec` does.
func bindEtc(name string) error {
	dir := filepath.Join("/etc/netns", name)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range ents {
		src := filepath.Join(dir, e.Name())
		dst := filepath.Join("/etc", e.Name())
		if err := unix.Mount(src, dst, "none", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s on %s: %w", src, dst, err)
		}
	}
	return nil
}
