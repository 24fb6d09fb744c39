package kernel

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nslab/nslab/internal/host"
	"github.com/nslab/nslab/topology/ns"
)

// ErrNoPktgen is returned when the kernel has no pktgen and it cannot be
// loaded.
var ErrNoPktgen = errors.New("this kernel has no pktgen")

// loadModule loads pktgen.ko of the running kernel (pktgen has no
// dependencies). Loading it creates /proc/net/pktgen in every namespace.
func loadModule() error { return host.LoadModule("kernel/net/core/pktgen.ko") }

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
	return &MissingError{Namespace: namespace, Config: host.KernelConfig("CONFIG_NET_PKTGEN"), LoadErr: loadErr}
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
