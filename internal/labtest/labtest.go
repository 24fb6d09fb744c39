// Package labtest holds helpers for nslab's privileged tests: skipping when
// not root, random lab names, throwaway namespaces, and a real ICMP echo
// from inside a namespace. It imports testing: only tests import it
// (the benchmark programs use labname).
package labtest

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labname"
	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/probe"
	"github.com/vishvananda/netlink"
)

// SkipUnlessRoot skips privileged tests for unprivileged runs, and under
// -short (make test-unit: no root, no network namespace, whoever runs it).
func SkipUnlessRoot(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs root and builds namespaces: skipped under -short (make test-root runs it)")
	}
	if os.Geteuid() != 0 {
		tb.Skip("needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN)")
	}
}

// Name returns a random name (see labname.Random).
func Name(prefix string) string { return labname.Random(prefix) }

// Rename renames a lab file (see labname.Rename).
func Rename(data []byte, name string) []byte { return labname.Rename(data, name) }

// Ping sends count ICMP echo requests to dst from inside namespace nsName
// (under dir) and returns how many replies came back (see probe.Echo).
func Ping(dir, nsName string, dst netip.Addr, count int, timeout time.Duration) (int, error) {
	n, err := ns.Open(dir, nsName)
	if err != nil {
		return 0, err
	}
	defer n.Close()
	r, err := probe.Echo(n, dst, count, timeout, true)
	if err == nil && r.Err != nil {
		err = r.Err
	}
	return r.Received, err
}

// Checksum is the Internet checksum (RFC 1071).
func Checksum(b []byte) uint16 { return probe.Checksum(b) }

// Root reports whether privileged tests and benchmarks can run.
func Root() bool { return os.Geteuid() == 0 }

// Handle opens a netlink handle inside namespace nsName (under dir),
// closed when the test ends.
func Handle(t testing.TB, dir, nsName string) *netlink.Handle {
	t.Helper()
	n, err := ns.Open(dir, nsName)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	h, err := n.NetlinkHandle()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// NetnsDir is a run directory of the test's own for named namespaces,
// released (see ns.ReleaseDir) and removed when the test ends.
func NetnsDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		if err := ns.ReleaseDir(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

// OpenNamespace is Namespace, opened; it is closed when the test ends.
func OpenNamespace(t *testing.T, dir string) *ns.NS {
	t.Helper()
	name := Namespace(t, dir)
	n, err := ns.Open(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// Namespace creates a throwaway named namespace under dir with lo up, and
// removes it when the test ends.
func Namespace(t *testing.T, dir string) string {
	t.Helper()
	c, err := ns.NewCreator(dir)
	if err != nil {
		t.Fatal(err)
	}
	name := Name("n")
	n, err := c.Create(name, nil)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	t.Cleanup(func() {
		if err := ns.Remove(dir, name); err != nil {
			t.Errorf("remove namespace %s: %v", name, err)
		}
	})
	h, err := n.NetlinkHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	lo, err := nlsafe.LinkByName(h, "lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// Sysctls reads every readable file under /proc/sys/net inside namespace
// nsName (under dir): "net/ipv4/ip_forward" -> "1". Values the kernel
// draws at random per namespace (keys, seeds) and the live count of
// tracked connections (a lab's own first packets make some) are left
// out: they are not settings.
func Sysctls(t testing.TB, dir, nsName string) map[string]string {
	t.Helper()
	n, err := ns.Open(dir, nsName)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	out := map[string]string{}
	err = n.Do(func() error {
		return filepath.WalkDir("/proc/sys/net", func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if strings.Contains(p, "secret") || strings.HasSuffix(p, "tcp_fastopen_key") || strings.HasSuffix(p, "hash_seed") || strings.HasSuffix(p, "nf_conntrack_count") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err == nil {
				out[strings.TrimPrefix(p, "/proc/sys/")] = strings.TrimSpace(string(b))
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("read only %d sysctls in %s", len(out), nsName)
	}
	return out
}

// Churn changes h's namespace in a loop, on a goroutine of its own, until
// the test ends: a veth pair churn0/churn1 added, an address added to it
// and removed, the pair deleted, as fast as the kernel goes. It returns
// the count of changes made so far. Give it a handle of its own: a
// handle's socket serves one request at a time, so churn through the
// handle a test reads with would never run during its reads.
func Churn(t testing.TB, h *netlink.Handle) *atomic.Int64 {
	t.Helper()
	var changes atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		a, _ := netlink.ParseAddr("10.254.0.1/32")
		for {
			select {
			case <-stop:
				return
			default:
			}
			v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "churn0"}, PeerName: "churn1"}
			if err := h.LinkAdd(v); err != nil {
				t.Errorf("churn: %v", err)
				return
			}
			if err := errors.Join(h.AddrAdd(v, a), h.AddrDel(v, a), h.LinkDel(v)); err != nil {
				t.Errorf("churn: %v", err)
				return
			}
			changes.Add(4)
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return &changes
}

// CoveredOnHost skips a privileged test in the VM harness when the host's
// run of the same test covers it: its path does not depend on anything
// the host's kernel lacks (no pktgen, netem, 802.1Q, ...), and under the
// VM's emulated CPUs it runs five to seven times slower for nothing new.
// A test whose path differs in the VM (bench's auto engine picks kernel
// pktgen there) does not call it.
func CoveredOnHost(tb testing.TB) {
	tb.Helper()
	if InVM {
		tb.Skip("the host's run covers this test (nothing in its path is what the host's kernel lacks)")
	}
}
