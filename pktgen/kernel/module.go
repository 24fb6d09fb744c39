package kernel

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// ErrNoPktgen is returned when the kernel has no pktgen and it cannot be
// loaded.
var ErrNoPktgen = errors.New("this kernel has no pktgen")

// moduleInitCompressedFile is finit_module's MODULE_INIT_COMPRESSED_FILE.
const moduleInitCompressedFile = 4

// loadModule loads pktgen.ko of the running kernel with finit_module, as
// modprobe would (pktgen has no dependencies). Loading it creates
// /proc/net/pktgen in every namespace.
func loadModule() error {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return err
	}
	release := unix.ByteSliceToString(uts.Release[:])
	base := filepath.Join("/lib/modules", release, "kernel/net/core/pktgen.ko")
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
	return fmt.Errorf("no pktgen module at %s[.xz|.zst|.gz]", base)
}

// MissingError says why pktgen cannot run in a namespace: what the kernel
// configuration says, and what loading the module gave. It wraps
// ErrNoPktgen.
type MissingError struct {
	Namespace string
	Config    string // the CONFIG_NET_PKTGEN line of /proc/config.gz; "" when unreadable
	LoadErr   error  // why the module could not be loaded
}

func (e *MissingError) Unwrap() error { return ErrNoPktgen }

// Short is the diagnosis in a line: what was measured, nothing assumed.
func (e *MissingError) Short() string {
	var parts []string
	switch {
	case e.Config == "":
		parts = append(parts, "/proc/config.gz is not readable, so the kernel's configuration is unknown")
	case strings.HasSuffix(e.Config, "is not set"):
		parts = append(parts, "the kernel was built without it ("+e.Config+")")
	default:
		parts = append(parts, "the kernel has "+e.Config)
	}
	if e.LoadErr != nil {
		parts = append(parts, "loading the module failed: "+e.LoadErr.Error())
	}
	return strings.Join(parts, "; ")
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%v: /proc/net/pktgen does not exist in namespace %s: %s. "+
		"pktgen needs CONFIG_NET_PKTGEN=m (or =y): distribution kernels have it (Debian: linux-image-amd64, then `modprobe pktgen`), "+
		"or rebuild the kernel with Networking support > Networking options > Network testing > Packet Generator", ErrNoPktgen, e.Namespace, e.Short())
}

// missingPktgen explains what the kernel lacks and how to get it.
func missingPktgen(namespace string, loadErr error) error {
	return &MissingError{Namespace: namespace, Config: kernelConfig("CONFIG_NET_PKTGEN"), LoadErr: loadErr}
}

// kernelConfig returns the line of /proc/config.gz that mentions key, or "".
func kernelConfig(key string) string {
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

// Available reports whether pktgen can run in namespace n: its proc
// directory exists there, or appears once the module is loaded. The error
// (a *MissingError) says what the kernel lacks. It runs on a thread inside
// n.
func Available(n *ns.NS) error {
	return n.Do(func() error {
		if _, err := os.Stat(DefaultDir); err == nil {
			return nil
		}
		loadErr := loadModule()
		if _, err := os.Stat(DefaultDir); err == nil {
			return nil
		}
		return missingPktgen(n.Name, loadErr)
	})
}

// Version reads pktgen's version in namespace n ("2.75"), or "".
func Version(n *ns.NS) string {
	var v string
	_ = n.Do(func() error { // "" when it cannot be read
		b, err := os.ReadFile(DefaultDir + "/pgctrl")
		if err != nil {
			return err
		}
		if _, after, ok := strings.Cut(string(b), "Version: "); ok {
			v = strings.TrimSpace(strings.SplitN(after, "\n", 2)[0])
		}
		return nil
	})
	return v
}
