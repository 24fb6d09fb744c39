package ns

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestPrivilegedProcWriter writes a sysctl in two namespaces through one
// writer: each namespace gets its own value (the writer's /proc is the one
// it entered), the host's /proc shows the same values from inside each,
// and the writer's proc mounts never appear in the host's mount table.
func TestPrivilegedProcWriter(t *testing.T) {
	skipUnlessRoot(t)
	dir := testDir(t)
	c, err := NewCreator(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mountsBefore := procMounts(t)
	w := NewProcWriter()
	var nss []*NS
	for i, name := range []string{"a", "b"} {
		n, err := c.Create(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer Remove(dir, name)
		defer n.Close()
		nss = append(nss, n)
		err = w.DoIn(n, func() error {
			return os.WriteFile("/proc/sys/net/ipv4/ip_default_ttl", []byte(fmt.Sprint(40+i)), 0)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	for i, n := range nss {
		var got []byte
		if err := n.Do(func() error {
			var err error
			got, err = os.ReadFile("/proc/sys/net/ipv4/ip_default_ttl")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprint(40 + i); strings.TrimSpace(string(got)) != want {
			t.Errorf("%s: ip_default_ttl %q, want %s", n.Name, got, want)
		}
	}
	if after := procMounts(t); after != mountsBefore {
		t.Errorf("proc mounts in the host's namespace: %d before, %d after", mountsBefore, after)
	}
}

func procMounts(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "proc /proc")
}
