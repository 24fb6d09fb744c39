package rootless

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDir: the state directory is made 0700 under $XDG_RUNTIME_DIR, and
// one that another could have planted (open to others, or a link) is
// refused with what to do.
func TestDir(t *testing.T) {
	run := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(dir)
	if err != nil || dir != filepath.Join(run, "nslab") || st.Mode().Perm() != 0o700 {
		t.Fatalf("Dir() = %s (%v, %v)", dir, st.Mode(), err)
	}
	os.Chmod(dir, 0o777)
	if _, err := Dir(); err == nil || !strings.Contains(err.Error(), "mode 0700") {
		t.Errorf("a directory open to others: %v", err)
	}
	os.Remove(dir)
	os.Symlink(t.TempDir(), dir)
	if _, err := Dir(); err == nil || !strings.Contains(err.Error(), "is not a directory of uid") {
		t.Errorf("a link: %v", err)
	}
}

// TestDirWithoutRuntimeDir: without $XDG_RUNTIME_DIR (su without a login
// session) the directory is the user's under the temporary directory.
func TestDirWithoutRuntimeDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(tmp, "nslab-"+strconv.Itoa(os.Getuid())); dir != want {
		t.Errorf("Dir() = %s, want %s", dir, want)
	}
}

// TestRefuse: a refusal names what, that it needs the host's root, and
// what to do instead, and wraps ErrNeedsRoot.
func TestRefuse(t *testing.T) {
	err := Refuse("kernel pktgen (engine pktgen)", "use engine userspace")
	if !strings.HasPrefix(err.Error(), "kernel pktgen (engine pktgen) needs root on the host, and this lab is rootless (nslab runs as uid ") ||
		!strings.HasSuffix(err.Error(), "): use engine userspace") || !errors.Is(err, ErrNeedsRoot) {
		t.Errorf("Refuse: %v", err)
	}
}
