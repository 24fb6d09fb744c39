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
	"strings"
	"sync"
	"syscall"
)

// SSH reaches a host's agent with the OpenSSH client: the user's
// ~/.ssh/config (or Config), ssh-agent and known_hosts apply as they do
// for the user's own ssh, and ssh runs with BatchMode (no prompt: a key
// that needs a passphrase comes from the agent) and
// StrictHostKeyChecking=yes (a host whose key is not known, or has
// changed, is refused, never learned). The OpenSSH client rather than a
// Go SSH library: its configuration (ProxyJump, Match, certificates,
// hardware keys) is the user's as it stands, which a library would only
// partly read.
type SSH struct {
	Target string // [user@]host, as ssh takes it
	Config string // ssh -F: a configuration file instead of ~/.ssh/config; "" for the user's
	Exe    string // this nslab's executable, copied to the host when it has another
	ID     string // its BinaryID
}

// agentPath is where a copied nslab lives on a host: under the remote
// user's cache, named by its binary's hash, so that two versions never
// overwrite each other.
func agentPath(id string) string { return "$HOME/.cache/nslab/bin/nslab-" + id[:16] }

// command is the ssh command line that runs remote on the host.
func (s SSH) command(ctx context.Context, remote string) *exec.Cmd {
	args := []string{"-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"}
	if s.Config != "" {
		args = append(args, "-F", s.Config)
	}
	args = append(args, "--", s.Target, remote)
	cmd := exec.CommandContext(ctx, "ssh", args...)
	// ssh ends with the coordinator, even when it is killed: the agent
	// then reads the end of its input and undoes what it was doing.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	return cmd
}

// Dial starts the agent on the host: the nslab copied there earlier for
// this very binary, else the host's own nslab if it is this binary, else
// this binary copied there first.
func (s SSH) Dial(ctx context.Context, global []string) (*Conn, error) {
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
	c.Close()
	if err != nil && !errors.Is(err, errNoAgent) {
		return nil, err
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
		return nil, fmt.Errorf("the nslab copied to %s is not this one (hash %s, want %s)", s.Target, short(h.Binary), short(s.ID))
	}
	return c, nil
}

// start runs remote over ssh and speaks the protocol on its stdio.
func (s SSH) start(ctx context.Context, remote string) (*Conn, error) {
	cmd := s.command(ctx, remote)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("ssh %s: %w", s.Target, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("ssh %s: %w", s.Target, err)
	}
	c := &Conn{Target: s.Target, cmd: cmd, in: in, stream: newStream(out, in)}
	cmd.Stderr = &c.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("ssh %s: %w", s.Target, err)
	}
	return c, nil
}

// copyAgent copies this nslab to agentPath on the host (to a temporary
// name first, so that a copy cut short is never run).
func (s SSH) copyAgent(ctx context.Context) error {
	f, err := os.Open(s.Exe)
	if err != nil {
		return fmt.Errorf("copy nslab to %s: %w", s.Target, err)
	}
	defer f.Close()
	p := agentPath(s.ID)
	cmd := s.command(ctx, fmt.Sprintf(`set -e; p=%s; mkdir -p "$(dirname "$p")"; cat > "$p.$$"; chmod 755 "$p.$$"; mv "$p.$$" "$p"`, p))
	cmd.Stdin = f
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("copy nslab to %s: %w: %s", s.Target, err, strings.TrimSpace(errOut.String()))
	}
	return nil
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
	Target string
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

// wait reaps ssh once, however many ask.
func (c *Conn) wait() error {
	c.once.Do(func() { c.werr = c.cmd.Wait() })
	return c.werr
}

// Call sends r and waits for the answer, answering the verb's asks for
// other hosts' hops on the way. A channel that ends says why: ssh's own
// words (host key, authentication, connection) when it had any.
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

// ended is why the channel ended: ssh's exit and words.
func (c *Conn) ended(err error) error {
	_ = c.in.Close() // ssh may have closed it already
	werr := c.wait()
	words := strings.TrimSpace(c.stderr.String())
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee) && ee.ExitCode() == 127:
		return errNoAgent
	case errors.As(werr, &ee) && ee.ExitCode() == 255:
		return fmt.Errorf("ssh %s: %s", c.Target, cmp.Or(words, "the connection failed"))
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
	_ = c.in.Close()             // ssh may have ended already
	go func() { _ = c.wait() }() // reaped; its exit matters to no one now
}
