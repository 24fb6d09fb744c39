package ns

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func skipUnlessRoot(tb testing.TB) {
	if os.Geteuid() != 0 {
		tb.Skip("needs root")
	}
}

// testDir is a run directory of the test's own, released when it ends
// (the first namespace makes it a bind mount of itself).
func testDir(t *testing.T) string {
	dir := t.TempDir()
	t.Cleanup(func() {
		if err := ReleaseDir(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

// testNamespace is a network namespace of a random name with prefix,
// made in a run directory of the test's own (returned) and removed when
// the test ends.
func testNamespace(t *testing.T, prefix string) (string, *NS) {
	t.Helper()
	dir := testDir(t)
	c, err := NewCreator(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	name := fmt.Sprintf("%s%d", prefix, rand.IntN(1e6))
	n, err := c.Create(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(); _ = Remove(dir, name) })
	return dir, n
}

func threadNetns(t *testing.T) uint64 {
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func TestNamesCannotLeaveDir(t *testing.T) {
	for _, name := range []string{"", ".", "..", "../x", "a/b", "/abs"} {
		if _, err := pathOf("/run/netns", name); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
}

func TestPrivilegedCreateKeepsCallerThread(t *testing.T) {
	skipUnlessRoot(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadNetns(t)
	dir := testDir(t)
	c, err := NewCreator(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var inside uint64
	n, err := c.Create("a", func() error { inside = threadNetns(t); return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer Remove(dir, "a")
	defer n.Close()
	if after := threadNetns(t); after != before {
		t.Fatalf("caller's thread moved from netns %d to %d", before, after)
	}
	ino, _ := n.Inode()
	if inside != ino || inside == before {
		t.Errorf("setup ran in netns %d; namespace is %d, host %d", inside, ino, before)
	}
	// Do runs inside, on another thread.
	var did uint64
	if err := n.Do(func() error { did = threadNetns(t); return nil }); err != nil {
		t.Fatal(err)
	}
	if did != ino || threadNetns(t) != before {
		t.Errorf("Do ran in %d (want %d); caller now in %d", did, ino, threadNetns(t))
	}
	if _, err := c.Create("a", nil); !errors.Is(err, ErrExists) {
		t.Errorf("second create: %v", err)
	}
}

func TestPrivilegedOpenAndRemove(t *testing.T) {
	skipUnlessRoot(t)
	dir := testDir(t)
	if _, err := Open(dir, "missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("open missing: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "plain"), nil, 0o444)
	if _, err := Open(dir, "plain"); !errors.Is(err, ErrNotNamespace) {
		t.Errorf("open plain file: %v", err)
	}
	c, err := NewCreator(dir)
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Create("b", nil)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	if names, _ := List(dir); len(names) != 2 {
		t.Errorf("list: %v", names)
	}
	for i := 0; i < 2; i++ { // twice: removing a removed namespace is fine
		if err := Remove(dir, "b"); err != nil {
			t.Fatalf("remove %d: %v", i, err)
		}
	}
	if ok, _ := Exists(dir, "b"); ok {
		t.Error("still exists")
	}
}

// TestPrivilegedMainThreadStaysHome: whatever thread the namespace
// goroutines ran on (the main thread included, which Go never kills), the
// process's main thread is still in the host namespace afterwards.
func TestPrivilegedMainThreadStaysHome(t *testing.T) {
	skipUnlessRoot(t)
	mainNS := func() uint64 {
		var st unix.Stat_t
		if err := unix.Stat("/proc/self/ns/net", &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	host := mainNS()
	dir := testDir(t)
	c, err := NewCreator(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		name := fmt.Sprintf("m%d", i)
		n, err := c.Create(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		n.Do(func() error { return nil })
		if w, err := n.Worker(); err == nil {
			w.Do(func() error { return nil })
			w.Close()
		}
		n.Close()
		Remove(dir, name)
	}
	c.Close()
	if got := mainNS(); got != host {
		t.Fatalf("the main thread is in namespace %d, not the host's %d", got, host)
	}
}

// TestPrivilegedScratchLeavesNothing: a link made in a scratch namespace is
// not in the caller's, and the caller's thread stays in its namespace.
func TestPrivilegedScratchLeavesNothing(t *testing.T) {
	skipUnlessRoot(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	home := threadNetns(t)
	name := fmt.Sprintf("scr%08x", rand.Uint32())
	var inside uint64
	err := Scratch(func() error {
		var st unix.Stat_t
		if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
			return err
		}
		inside = st.Ino
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		return h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name + "p"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if inside == home || threadNetns(t) != home {
		t.Errorf("scratch ran in namespace %d, caller's %d, caller now in %d", inside, home, threadNetns(t))
	}
	if _, err := netlink.LinkByName(name); err == nil {
		t.Errorf("%s is visible in the caller's namespace", name)
	}
}

// TestPrivilegedRunDirMount: the first namespace gives an empty run
// directory a tmpfs of its own (new files on a disk file system cost more
// with every recent delete), shared; a directory that holds something
// gets a bind mount of itself, as iproute2 does, which hides nothing.
func TestPrivilegedRunDirMount(t *testing.T) {
	skipUnlessRoot(t)
	for _, c := range []struct {
		name, before, want string
	}{{"empty", "", "tmpfs"}, {"not empty", "left-by-someone", "bind"}} {
		t.Run(c.name, func(t *testing.T) {
			dir := testDir(t)
			if c.before != "" {
				if err := os.WriteFile(filepath.Join(dir, c.before), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cr, err := NewCreator(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer cr.Close()
			name := fmt.Sprintf("nslm%d", rand.IntN(1e6))
			n, err := cr.Create(name, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { n.Close(); _ = Remove(dir, name) })
			text, err := os.ReadFile("/proc/self/mountinfo")
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, line := range strings.Split(string(text), "\n") {
				f := strings.Fields(line)
				if len(f) < 10 || f[4] != dir || !strings.Contains(line, "shared:") {
					continue
				}
				got = "bind"
				if sep := slices.Index(f, "-"); sep > 0 && f[sep+1] == "tmpfs" && f[sep+2] == "nslab-netns" {
					got = "tmpfs"
				}
			}
			if got != c.want {
				t.Errorf("%s: a shared mount %q, want %q", dir, got, c.want)
			}
			if c.before != "" {
				if _, err := os.Stat(filepath.Join(dir, c.before)); err != nil {
					t.Errorf("what was there is hidden: %v", err)
				}
			}
		})
	}
}
