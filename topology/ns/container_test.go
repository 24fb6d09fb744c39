package ns

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// containerEnv carries what the "container" half of
// TestPrivilegedViewOutlivesItsContainer needs: the run directory, the
// namespace's name and the lab's directory of views.
const containerEnv = "NSLAB_NS_TEST_CONTAINER"

// TestPrivilegedViewOutlivesItsContainer: a process in a mount namespace
// of its own whose run directory propagates nowhere (a container with a
// hostPath volume, as the Kubernetes agent's pod is) makes a node's view
// with MountOutsideContainer, and exits. The view is held in this
// process's mount namespace (the node's), where the container's would
// have gone with it: opened here, a program started in it sees the
// node's hostname. A second container opens it too, through the same
// home.
func TestPrivilegedViewOutlivesItsContainer(t *testing.T) {
	skipUnlessRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1) (util-linux)")
	}
	dir, n := testNamespace(t, "nslc")
	name := n.Name
	parent := filepath.Join(t.TempDir(), "views")
	labDir := filepath.Join(parent, "lab")
	t.Cleanup(func() { _ = RemoveViews(parent, labDir) })

	container := func(step string) string {
		cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", os.Args[0], "-test.run=^TestContainerHalf$", "-test.v")
		cmd.Env = append(os.Environ(), containerEnv+"="+strings.Join([]string{step, dir, name, labDir}, ":"))
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("container: "+step+" done")) {
			t.Fatalf("the container's %s: %v\n%s", step, err, out)
		}
		return string(out)
	}
	container("make")
	v, err := OpenView(labDir, name)
	if err != nil {
		t.Fatalf("the view the container made is not held here: %v", err)
	}
	defer v.Close()
	var out bytes.Buffer
	cmd := exec.Command("hostname")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := n.StartIn(v, cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil || strings.TrimSpace(out.String()) != "c-"+name {
		t.Errorf("hostname in the view: %v %q, want c-%s", err, out.String(), name)
	}
	container("open")
}

// TestContainerHalf is the container's side of
// TestPrivilegedViewOutlivesItsContainer (run by it, in a mount namespace
// of its own); it does nothing otherwise.
func TestContainerHalf(t *testing.T) {
	arg := os.Getenv(containerEnv)
	if arg == "" {
		t.Skip("run by TestPrivilegedViewOutlivesItsContainer")
	}
	f := strings.Split(arg, ":")
	step, dir, name, labDir := f[0], f[1], f[2], f[3]
	if err := MountOutsideContainer(); err != nil {
		t.Fatal(err)
	}
	switch step {
	case "make":
		n, err := Open(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		m := NewViewMaker()
		defer m.Close()
		if err := m.MakeAndBind(labDir, n, ViewSetup{Hostname: "c-" + name}); err != nil {
			t.Fatal(err)
		}
		// Not here: the container's own mounts go with it.
		if mountPoint(labDir) {
			t.Errorf("the lab's views are mounted in the container's own namespace")
		}
	case "open":
		v, err := OpenView(labDir, name)
		if err != nil {
			t.Fatal(err)
		}
		v.Close()
	}
	fmt.Printf("container: %s done\n", step)
}
