package host

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// KernelConfig returns the line of /proc/config.gz that mentions key
// ("CONFIG_NET_SCH_NETEM=m", "# CONFIG_NET_SCH_NETEM is not set"), or ""
// when the file cannot be read or does not mention it.
func KernelConfig(key string) string {
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return ""
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(z)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, key+"=") || line == "# "+key+" is not set" {
			return line
		}
	}
	return ""
}

// ConfigSays puts a KernelConfig line in words for a diagnosis.
func ConfigSays(key, line string) string {
	switch {
	case line == "":
		return "/proc/config.gz does not say whether the kernel has " + key
	case strings.HasSuffix(line, "is not set"):
		return "the kernel was built without it (" + line + ")"
	}
	return "the kernel has " + line
}

// moduleInitCompressedFile is finit_module's MODULE_INIT_COMPRESSED_FILE.
const moduleInitCompressedFile = 4

// LoadModule loads a module of the running kernel with finit_module, as
// modprobe would for a module without dependencies; rel is its path under
// /lib/modules/RELEASE without the compression suffix
// ("kernel/net/sched/sch_netem.ko"). A module already loaded is fine.
func LoadModule(rel string) error {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return err
	}
	base := filepath.Join("/lib/modules", unix.ByteSliceToString(uts.Release[:]), rel)
	for _, suffix := range []string{"", ".xz", ".zst", ".gz"} {
		f, err := os.Open(base + suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		flags := 0
		if suffix != "" {
			flags = moduleInitCompressedFile
		}
		err = unix.FinitModule(int(f.Fd()), "", flags)
		f.Close()
		if err == nil || errors.Is(err, unix.EEXIST) {
			return nil
		}
		return fmt.Errorf("load %s: %w", f.Name(), err)
	}
	name := strings.TrimSuffix(filepath.Base(rel), ".ko")
	return fmt.Errorf("no %s module at %s[.xz|.zst|.gz]", name, base)
}
