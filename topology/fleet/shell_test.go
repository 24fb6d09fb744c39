package fleet

import (
	"context"
	"os/exec"
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
