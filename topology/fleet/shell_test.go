package fleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestKubeExecCommand: the agent's pod is reached by nslab-kube exec on
// the host's node, the remote command line run by the pod's shell.
func TestKubeExecCommand(t *testing.T) {
	k := KubeExec{Helper: "/usr/bin/nslab-kube", Args: []string{"-kubeconfig", "/k"}, Node: "worker-2"}
	cmd := k.Command(context.Background(), "exec nslab agent")
	want := []string{"/usr/bin/nslab-kube", "-kubeconfig", "/k", "exec", "-node", "worker-2", "--", "sh", "-c", "exec nslab agent"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("command %q, want %q", cmd.Args, want)
	}
	if k.String() != "kubernetes node worker-2" || k.Host() != "node worker-2" {
		t.Errorf("named %q, %q", k.String(), k.Host())
	}
}

// failing is a shell whose every command prints words and exits code.
type failing struct {
	code  string
	words string
}

func (f failing) Command(ctx context.Context, _ string) *exec.Cmd {
	return exec.CommandContext(ctx, "sh", "-c", "echo '"+f.words+"' >&2; exit "+f.code)
}

func (f failing) String() string { return "shell to x" }

func (f failing) Host() string { return "shell to x" }

// TestDialShellFails: a shell that fails itself (255) is reported in its
// own words after its name; a remote command that fails is the agent's
// end, in the agent's words.
func TestDialShellFails(t *testing.T) {
	for _, c := range []struct {
		shell failing
		want  string
	}{
		{failing{"255", "pods is forbidden"}, "shell to x: pods is forbidden"},
		{failing{"1", "agent: bad option"}, "the agent on shell to x ended: agent: bad option"},
	} {
		_, err := Remote{Shell: c.shell, ID: strings.Repeat("0", 64)}.Dial(context.Background(), nil)
		if err == nil || err.Error() != c.want {
			t.Errorf("exit %s: %v, want %q", c.shell.code, err, c.want)
		}
	}
}

// localShell runs the remote command with sh here, as a host whose PATH
// has bin first (where the test puts its uname and nslab), in home.
type localShell struct{ bin, home string }

func (l localShell) Command(ctx context.Context, remote string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "sh", "-c", remote)
	// The system's programs and the test's, and no nslab of the
	// machine's (make's PATH has the build's bin/).
	cmd.Env = append(os.Environ(), "PATH="+l.bin+":/usr/bin:/bin", "HOME="+l.home)
	return cmd
}
func (l localShell) String() string { return "local shell" }
func (l localShell) Host() string   { return "host z" }

// TestDialRefusesAnotherArch: a host of another architecture is refused
// before nslab copies itself there, whether its own nslab (of another
// build) says so in its hello or uname -m does (no nslab there); nothing
// is copied.
func TestDialRefusesAnotherArch(t *testing.T) {
	for _, c := range []struct {
		name        string
		hostHasOwn  bool // the host's own nslab answers, of another build, on arm64
		wantInError string
	}{
		{"its nslab's hello", true, "is arm64 and this nslab is built for " + runtime.GOARCH},
		{"its uname -m", false, "is arm64 and this nslab is built for " + runtime.GOARCH},
	} {
		t.Run(c.name, func(t *testing.T) {
			if runtime.GOARCH == "arm64" {
				t.Skip("the test's other architecture is this one")
			}
			sh := localShell{bin: t.TempDir(), home: t.TempDir()}
			os.WriteFile(filepath.Join(sh.bin, "uname"), []byte("#!/bin/sh\necho aarch64\n"), 0o755)
			if c.hostHasOwn {
				os.WriteFile(filepath.Join(sh.bin, "nslab"), fmt.Appendf(nil, "#!/bin/sh\n%s=z %s=%s %s=arm64 exec %s -test.run='^$'\n",
					fakeAgentEnv, fakeIDEnv, strings.Repeat("cd", 32), fakeArchEnv, os.Args[0]), 0o755)
			}
			exe := filepath.Join(t.TempDir(), "nslab")
			os.WriteFile(exe, []byte("this nslab"), 0o755)
			_, err := Remote{Shell: sh, Exe: exe, ID: strings.Repeat("ab", 32)}.Dial(context.Background(), nil)
			if err == nil || !strings.Contains(err.Error(), c.wantInError) {
				t.Errorf("dial: %v, want %q", err, c.wantInError)
			}
			if _, err := os.Stat(filepath.Join(sh.home, ".cache")); err == nil {
				t.Errorf("nslab was copied to a host of another architecture")
			}
		})
	}
}
