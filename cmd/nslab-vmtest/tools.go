package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// hostTools are the host's own programs the VM gets, with the shared
// libraries they load: the shell and iproute2/procps/ethtool commands the
// dry-run scripts use (bridge for VLAN filtering; so the script equivalence test runs on the VM's
// kernel too, netem and nftables included), and tcpdump, which reads
// captures back. A
// program the host lacks is left out; the tests that need it skip.
var hostTools = []string{"bash", "ip", "tc", "bridge", "sysctl", "ethtool", "pgrep", "comm", "tcpdump", "nft"}

// toolsDir is where they go in the VM: first on /init's PATH, before
// busybox's applets of the same names.
const toolsDir = "usr/local/bin"

var lddLine = regexp.MustCompile(`(?:=> )?(/\S+) \(0x`)

// copyHostTools copies the host tools and every library ldd names for
// them (the dynamic loader included) into root, at the same paths.
func copyHostTools(root string) error {
	if err := os.MkdirAll(filepath.Join(root, toolsDir), 0o755); err != nil {
		return err
	}
	libs := map[string]bool{}
	for _, tool := range hostTools {
		path, err := exec.LookPath(tool)
		if err != nil {
			fmt.Printf("vmtest: %s is not installed here; the VM goes without it\n", tool)
			continue
		}
		if err := copyFile(path, filepath.Join(root, toolsDir, tool), 0o755); err != nil {
			return err
		}
		out, err := exec.Command("ldd", path).Output()
		if err != nil {
			return fmt.Errorf("ldd %s: %w", path, err)
		}
		for _, m := range lddLine.FindAllStringSubmatch(string(out), -1) {
			libs[m[1]] = true
		}
	}
	for lib := range libs {
		real, err := filepath.EvalSymlinks(lib)
		if err != nil {
			return err
		}
		dst := filepath.Join(root, strings.TrimPrefix(lib, "/"))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := copyFile(real, dst, 0o755); err != nil {
			return err
		}
	}
	return nil
}
