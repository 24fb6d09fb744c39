package fleet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// Shell runs a command line of the host's shell with its standard
// input and output joined to the returned command's: the channel a
// coordinator reaches an agent by (ssh, or an exec in the agent's pod).
type Shell interface {
	// Command is the local command that runs remote on the host.
	Command(ctx context.Context, remote string) *exec.Cmd
	// String names the channel in errors: "ssh root@host-a".
	String() string
	// Host names the host it reaches: "root@host-a", "node b".
	Host() string
}

// exitFailed is the exit code of a Shell's command that failed itself
// (ssh's own), as opposed to the remote command's.
const exitFailed = 255

// SSH reaches a host with the OpenSSH client: the user's ~/.ssh/config
// (or Config), ssh-agent and known_hosts apply as they do for the user's
// own ssh, and ssh runs with BatchMode (no prompt: a key that needs a
// passphrase comes from the agent) and StrictHostKeyChecking=yes (a host
// whose key is not known, or has changed, is refused, never learned). The
// OpenSSH client rather than a Go SSH library: its configuration
// (ProxyJump, Match, certificates, hardware keys) is the user's as it
// stands, which a library would only partly read.
type SSH struct {
	Target string // [user@]host, as ssh takes it
	Config string // ssh -F: a configuration file instead of ~/.ssh/config; "" for the user's
}

func (s SSH) String() string { return "ssh " + s.Target }

func (s SSH) Host() string { return s.Target }

// Command is the ssh command line that runs remote on the host.
func (s SSH) Command(ctx context.Context, remote string) *exec.Cmd {
	args := []string{"-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"}
	if s.Config != "" {
		args = append(args, "-F", s.Config)
	}
	args = append(args, "--", s.Target, remote)
	return endsWithUs(exec.CommandContext(ctx, "ssh", args...))
}

// KubeExec reaches the nslab agent's pod on a Kubernetes node (the
// DaemonSet of deploy/kubernetes/) by the API server's pods/exec, as
// kubectl exec does: Helper (nslab-kube, which links client-go) runs
// remote in the pod, through the API server and the node's kubelet, with
// the user's kubeconfig and the rights it grants. Helper exits 255 when
// it fails itself, and with the remote command's exit code otherwise.
type KubeExec struct {
	Helper string   // nslab-kube's executable
	Args   []string // its options before the verb (-kubeconfig)
	Node   string   // the Kubernetes node of the host
}

func (k KubeExec) String() string { return "kubernetes node " + k.Node }

func (k KubeExec) Host() string { return "node " + k.Node }

// Command is nslab-kube exec on the node's agent pod, with remote run by
// its shell.
func (k KubeExec) Command(ctx context.Context, remote string) *exec.Cmd {
	args := append(slices.Clone(k.Args), "exec", "-node", k.Node, "--", "sh", "-c", remote)
	return endsWithUs(exec.CommandContext(ctx, k.Helper, args...))
}

// endsWithUs has cmd end with the coordinator, even when it is killed:
// the agent then reads the end of its input and undoes what it was doing.
func endsWithUs(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	return cmd
}

// Remote reaches a host's agent through a Shell: the nslab copied there
// earlier for this very binary, else the host's own nslab if it is this
// binary, else this binary copied there first.
type Remote struct {
	Shell Shell
	Exe   string // this nslab's executable, copied to the host when it has another
	ID    string // its BinaryID
	// Fixed: the host's agent is the nslab its image holds (a Kubernetes
	// agent pod), never replaced by a copy: one of another build is
	// refused, naming both, unless it is of this very version.
	Fixed   bool
	Version string // this nslab's version, for Fixed
}

// agentPath is where a copied nslab lives on a host: under the remote
// user's cache, named by its binary's hash, so that two versions never
// overwrite each other.
func agentPath(id string) string { return "$HOME/.cache/nslab/bin/nslab-" + id[:16] }

// Dial starts the agent on the host with the global options.
func (s Remote) Dial(ctx context.Context, global []string) (*Conn, error) {
	opts := shellWords(global)
	remote := fmt.Sprintf(`p=%s; if [ -x "$p" ]; then exec "$p"%s agent; fi; exec nslab%s agent`, agentPath(s.ID), opts, opts)
	c, err := s.start(ctx, remote)
	if err != nil {
		return nil, err
	}
	h, err := c.Hello(ctx)
	if err == nil && h.Binary == s.ID {
		return c, nil
	}
	if s.Fixed && err == nil && h.Version == s.Version && s.Version != "dev" {
		return c, nil
	}
	c.Close()
	if s.Fixed && err == nil {
		return nil, fmt.Errorf("%s runs nslab %s (its image's, hash %s), this is nslab %s (hash %s): run this verb with the nslab of the agents' image, or roll the agents to this one's image (make kube-image; nslab-kube manifests -image REF)",
			c.Target, h.Version, short(h.Binary), s.Version, short(s.ID))
	}
	if s.Fixed {
		return nil, err
	}
	if err != nil && !errors.Is(err, errNoAgent) {
		return nil, err
	}
	if err == nil && h.Arch != "" && h.Arch != runtime.GOARCH {
		return nil, archError(c.Target, h.Arch)
	}
	if err := s.copyAgent(ctx); err != nil {
		return nil, err
	}
	if c, err = s.start(ctx, fmt.Sprintf(`exec %s%s agent`, agentPath(s.ID), opts)); err != nil {
		return nil, err
	}
	if h, err = c.Hello(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if h.Binary != s.ID {
		c.Close()
		return nil, fmt.Errorf("the nslab copied to %s is not this one (hash %s, want %s)", c.Target, short(h.Binary), short(s.ID))
	}
	return c, nil
}

// start runs remote through the shell and speaks the protocol on its
// stdio.
func (s Remote) start(ctx context.Context, remote string) (*Conn, error) {
	cmd := s.Shell.Command(ctx, remote)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Shell, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Shell, err)
	}
	c := &Conn{Target: s.Shell.Host(), via: s.Shell.String(), cmd: cmd, in: in, stream: newStream(out, in)}
	cmd.Stderr = &c.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Shell, err)
	}
	return c, nil
}

// copyAgent copies this nslab to agentPath on the host (to a temporary
// name first, so that a copy cut short is never run).
func (s Remote) copyAgent(ctx context.Context) error {
	f, err := os.Open(s.Exe)
	if err != nil {
		return fmt.Errorf("copy nslab to %s: %w", s.Shell.Host(), err)
	}
	defer f.Close()
	p := agentPath(s.ID)
	// The host's machine first (uname -m, as Go names it): a binary of
	// another architecture is not copied to fail there.
	cmd := s.Shell.Command(ctx, fmt.Sprintf(`set -e; m=$(uname -m); case "$m" in x86_64) a=amd64;; aarch64) a=arm64;; i?86) a=386;; armv*) a=arm;; *) a=$m;; esac
if [ "$a" != %s ]; then echo "%s$a" >&2; exit 3; fi
p=%s; mkdir -p "$(dirname "$p")"; cat > "$p.$$"; chmod 755 "$p.$$"; mv "$p.$$" "$p"`, runtime.GOARCH, archMark, p))
	cmd.Stdin = f
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil {
		words := strings.TrimSpace(errOut.String())
		if arch, ok := strings.CutPrefix(words, archMark); ok {
			return archError(s.Shell.Host(), arch)
		}
		return fmt.Errorf("copy nslab to %s: %w: %s", s.Shell.Host(), err, words)
	}
	return nil
}

// archMark starts the line the copy's script writes when the host's
// machine is not this nslab's.
const archMark = "nslab: the host's architecture: "

// archError refuses a host whose machine is another architecture than
// this nslab's, before anything is copied there.
func archError(host, arch string) error {
	return fmt.Errorf("%s is %s and this nslab is built for %s: nothing was copied there (a lab over hosts runs this very binary on each host, so they must all be %s)",
		host, arch, runtime.GOARCH, runtime.GOARCH)
}

// shellWords is args quoted for the remote shell, each after a space.
func shellWords(args []string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteString(" '" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}

// errNoAgent: the host has no nslab to run as the agent (the shell's
// "not found").
var errNoAgent = errors.New("no nslab on the host")

// Conn is a coordinator's channel to one agent.
type Conn struct {
	Target string // the host as its shell names it: [user@]host, node NAME
	via    string // the shell, for its own failures: "ssh root@host-a"
	cmd    *exec.Cmd
	in     io.WriteCloser
	stream *stream
	stderr bytes.Buffer
	once   sync.Once
	werr   error
	// asked answers a verb's ask for other hosts' hops (nil: the verb's
	// asks are refused).
	asked func(ctx context.Context, ask map[string]json.RawMessage) Request
}

// wait reaps the shell's command once, however many ask.
func (c *Conn) wait() error {
	c.once.Do(func() { c.werr = c.cmd.Wait() })
	return c.werr
}

// Call sends r and waits for the answer, answering the verb's asks for
// other hosts' hops on the way. A channel that ends says why: the
// shell's own words (ssh's host key, authentication, connection; the API
// server's refusal) when it had any.
func (c *Conn) Call(ctx context.Context, r Request) (Response, error) {
	if err := c.stream.send(r); err != nil {
		return Response{}, c.ended(err)
	}
	for {
		resp, err := c.recv(ctx)
		switch {
		case err != nil:
			return Response{}, err
		case resp.Ask != nil:
			ans := Request{Op: OpAnswer, Error: "no other host is reached from here"}
			if c.asked != nil {
				ans = c.asked(ctx, resp.Ask)
			}
			if err := c.stream.send(ans); err != nil {
				return Response{}, c.ended(err)
			}
		case resp.Error != "":
			return resp, errors.New(resp.Error)
		default:
			return resp, nil
		}
	}
}

// recv reads one response, or gives up with ctx.
func (c *Conn) recv(ctx context.Context) (Response, error) {
	done := make(chan error, 1)
	var resp Response
	go func() { done <- c.stream.recv(&resp) }()
	select {
	case err := <-done:
		if err != nil {
			return Response{}, c.ended(err)
		}
		return resp, nil
	case <-ctx.Done():
		c.Close()
		return Response{}, ctx.Err()
	}
}

// ended is why the channel ended: the shell's exit and words.
func (c *Conn) ended(err error) error {
	_ = c.in.Close() // the shell may have closed it already
	werr := c.wait()
	words := strings.TrimSpace(c.stderr.String())
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee) && ee.ExitCode() == 127:
		return errNoAgent
	case errors.As(werr, &ee) && ee.ExitCode() == exitFailed:
		return fmt.Errorf("%s: %s", c.via, cmp.Or(words, "the connection failed"))
	case words != "":
		return fmt.Errorf("the agent on %s ended: %s", c.Target, words)
	}
	return fmt.Errorf("the agent on %s ended: %w", c.Target, err)
}

// Hello asks the agent who it is.
func (c *Conn) Hello(ctx context.Context) (*Hello, error) {
	r, err := c.Call(ctx, Request{Op: OpHello})
	if err != nil {
		return nil, err
	}
	return r.Hello, nil
}

// Close ends the channel: the agent reads the end of its input and exits.
func (c *Conn) Close() {
	_ = c.in.Close()             // the shell may have ended already
	go func() { _ = c.wait() }() // reaped; its exit matters to no one now
}
