package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// isolatedEnv marks the bench's own re-execution in a mount namespace of
// its own (see placeNamespaces).
const isolatedEnv = "NSLAB_BENCH_ISOLATED"

// placeNamespaces decides where the benchmark's namespaces are named, for
// nslab and the iproute2 scripts alike, and says where in a line for the
// output. "host" keeps this machine's /run/netns as it is. "tmpfs" (the
// default) wants /run/netns on a tmpfs, as it is on most systems; when it
// is not, the bench runs itself again in a mount namespace of its own with
// a tmpfs mounted on /run/netns there (invisible to the host, gone when
// the bench ends) and exits with that run's status. Why: on a disk file
// system every namespace is a new inode, and ext4 without a journal skips
// the inodes deleted in the last minutes on every allocation, so each
// deploy there pays for the destroys before it, a cost of the machine's
// history and not of the lab.
func placeNamespaces(choice string) (string, error) {
	fs := fsName(ns.DefaultDir)
	switch {
	case choice == "host":
		return fmt.Sprintf("namespaces named in this machine's %s (%s)", ns.DefaultDir, fs), nil
	case choice != "tmpfs":
		return "", fmt.Errorf("-netns %q: tmpfs or host", choice)
	case os.Getenv(isolatedEnv) != "":
		if err := os.MkdirAll(ns.DefaultDir, 0o755); err != nil {
			return "", err
		}
		if err := unix.Mount("nslab-bench", ns.DefaultDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755"); err != nil {
			return "", fmt.Errorf("mount a tmpfs on %s: %w", ns.DefaultDir, err)
		}
		return fmt.Sprintf("namespaces named in %s on a tmpfs mounted for this run in a mount namespace of its own (this machine's is on %s: -netns host measures there)",
			ns.DefaultDir, os.Getenv(isolatedEnv)), nil
	case fs == "tmpfs":
		return fmt.Sprintf("namespaces named in %s (tmpfs)", ns.DefaultDir), nil
	}
	os.Exit(runIsolated(fs))
	return "", nil
}

// runIsolated runs this program again with the same arguments in a new
// mount namespace, private from the host's (Go marks its root private
// after unshare), and returns its exit status.
func runIsolated(hostFS string) int {
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), isolatedEnv+"="+hostFS)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		fail(fmt.Errorf("run in a mount namespace of its own: %w", err))
	}
	return 0
}

// fsName names the file system holding path (or its nearest existing
// parent), from statfs's magic number.
func fsName(path string) string {
	var sfs unix.Statfs_t
	for p := path; ; p = filepath.Dir(p) {
		if err := unix.Statfs(p, &sfs); err == nil || p == "/" {
			break
		}
	}
	names := map[int64]string{unix.TMPFS_MAGIC: "tmpfs", unix.EXT4_SUPER_MAGIC: "ext2/3/4", unix.XFS_SUPER_MAGIC: "xfs",
		unix.BTRFS_SUPER_MAGIC: "btrfs", unix.OVERLAYFS_SUPER_MAGIC: "overlayfs", unix.RAMFS_MAGIC: "ramfs"}
	if n, ok := names[int64(sfs.Type)]; ok {
		return n
	}
	return fmt.Sprintf("file system 0x%x", sfs.Type)
}
