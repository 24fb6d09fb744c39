package ns

import (
	"bytes"
	"errors"
	"golang.org/x/sys/unix"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrivilegedViewIsTheNodes makes a node's view, holds it, and looks
// from inside (through StartIn, as services start) and from the host: the
// hostname and files are the view's, /tmp is its own, the host's /etc and
// /tmp are untouched, and RemoveViews leaves nothing.
func TestPrivilegedViewIsTheNodes(t *testing.T) {
	skipUnlessRoot(t)
	_, n := testNamespace(t, "nslv")
	name := n.Name

	parent := filepath.Join(t.TempDir(), "views")
	labDir := filepath.Join(parent, "lab")
	etcFile := "/etc/nslab-view-test-" + name + "/x.conf"
	m := NewViewMaker()
	err := m.MakeAndBind(labDir, n, ViewSetup{
		Hostname: "r-" + name,
		Dirs:     []ViewDir{{Path: "/run/frr", Mode: 0o750, UID: 0, GID: 0}},
		Files:    []ViewFile{{Path: etcFile, Data: []byte("router " + name + "\n"), Mode: 0o640}},
	})
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = RemoveViews(parent, labDir) })
	// The views' mount points are on a tmpfs of nslab's own, not on the
	// disk the directory is on (inodes there grow costly to allocate).
	var sfs unix.Statfs_t
	if err := unix.Statfs(parent, &sfs); err != nil || sfs.Type != unix.TMPFS_MAGIC {
		t.Errorf("the directory of views is not a tmpfs: type %#x (%v)", sfs.Type, err)
	}

	v2, err := OpenView(labDir, name)
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	var out bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", "hostname; cat "+etcFile+"; stat -c %a /run/frr; echo in-view > /tmp/"+name+"; ls /sys/class/net")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := n.StartIn(v2, cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"r-" + name, "router " + name, "750", "lo"}
	if len(lines) != len(want) {
		t.Fatalf("inside the view: %q, want %q", lines, want)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("inside the view, line %d: %q, want %q", i, lines[i], want[i])
		}
	}
	host, _ := os.Hostname()
	if host == "r-"+name {
		t.Errorf("the host's hostname became the node's")
	}
	for _, p := range []string{filepath.Dir(etcFile), "/tmp/" + name} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists on the host (%v): the view wrote through", p, err)
		}
	}

	if err := RemoveViews(parent, labDir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(parent); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("views directory left: %v", err)
	}
	if err := RemoveViews(parent, labDir); err != nil {
		t.Errorf("RemoveViews again: %v", err)
	}
}

// TestOwnPath: a view writes only in directories of its own: /etc (the
// overlay) and the private directories this machine has.
func TestOwnPath(t *testing.T) {
	for p, own := range map[string]bool{"/etc/frr/frr.conf": true, "/run/frr/x": true, "/tmp/x": true, "/usr/local/x": false, "/etcx/y": false, "/var/lib/x": false} {
		if err := ownPath(p, nil); (err == nil) != own {
			t.Errorf("ownPath(%s): %v, want own %v", p, err, own)
		}
	}
	// /var/www is the node's where it has files there (overlaid) and the
	// machine has the directory.
	_, err := os.Stat("/var/www")
	if got := ownPath("/var/www/html/index.html", []string{"/var/www"}); (got == nil) != (err == nil) {
		t.Errorf("ownPath(/var/www/html/index.html) with /var/www overlaid: %v (the machine's /var/www: %v)", got, err)
	}
	if ownPath("/var/www/html/index.html", nil) == nil {
		t.Errorf("/var/www is the node's without an overlay")
	}
}
