package fleet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nslab/nslab/topology/spec"
	"golang.org/x/sys/unix"
)

// Agent serves one coordinator on one host, over In and Out (the ssh
// session's standard input and output). It runs in the host's own
// namespaces.
type Agent struct {
	Version string
	Exe     string // nslab's executable, run for each verb
	// Argv is the command line (after Exe) that runs a verb's args on
	// host's share of lab: the agent's global options, the host, and
	// args with their stand-ins (FileArg already the file's path, NameArg,
	// QuietArg) spelled as that command line takes them.
	Argv func(host, lab string, args []string) []string
	In   io.Reader
	Out  io.Writer
	// Start starts a verb's process (nil: exec.Cmd.Start): a Kubernetes
	// agent starts it outside its pod's cgroup, so that the daemons a
	// deploy starts outlive the pod.
	Start func(*exec.Cmd) error

	plan *Plan
	name string // the lab's name, when told without a plan (TakeName)
	host string
	file string // the lab's file, written where the verbs read it
	id   string // BinaryID(Exe), once known

	s       *stream
	answers chan Request // OpAnswer, for the verb that asked
	hops    *hopsReader  // this host's hops, read for a bench on another host
}

// agentVerbs are the verbs a coordinator may run on a host's share.
var agentVerbs = []string{"deploy", "apply", "destroy", "inspect", "check", "path", "bench", "impair", "link", "node", "top", "metrics"}

// Serve answers requests until the coordinator closes the channel, or ctx
// ends (a signal). When it does (the coordinator ended, or its ssh did)
// while a verb runs, the verb is interrupted as Ctrl-C would: a deploy
// takes back what it made. Either way what the agent kept is removed.
func (a *Agent) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.s, a.answers = newStream(a.In, a.Out), make(chan Request, 1)
	reqs := make(chan Request)
	go func() {
		defer close(reqs)
		defer cancel()
		for {
			var r Request
			if err := a.s.recv(&r); err != nil {
				return
			}
			to := reqs
			if r.Op == OpAnswer {
				to = a.answers // for the verb in progress, not the queue
			}
			select {
			case to <- r:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer a.removeFile()
	defer a.hops.close()
	for {
		var r Request
		var ok bool
		select {
		case r, ok = <-reqs:
		case <-ctx.Done(): // a signal: end as when the input ends
		}
		if !ok {
			return nil
		}
		if err := a.s.send(a.handle(ctx, r)); err != nil {
			return err
		}
	}
}

func (a *Agent) handle(ctx context.Context, r Request) Response {
	var err error
	resp := Response{}
	switch r.Op {
	case OpHello:
		resp.Hello, err = a.hello()
	case OpPlan:
		err = a.takePlan(r)
	case OpRun:
		resp, err = a.run(ctx, r.Args)
	case OpMTU:
		resp.Largest, err = LargestAnswered(ctx, r.To, r.Size)
		resp.Fits = resp.Largest >= r.Size
	case OpHops:
		resp.Body, err = a.readHops(r.Body)
	default:
		err = fmt.Errorf("unknown request %q", r.Op)
	}
	if err != nil {
		resp.Error = err.Error()
	}
	return resp
}

// hello says who the agent is, and what its clock says as it answers.
func (a *Agent) hello() (*Hello, error) {
	if a.id == "" {
		id, err := BinaryID(a.Exe)
		if err != nil {
			return nil, err
		}
		a.id = id
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return nil, fmt.Errorf("uname: %w", err)
	}
	return &Hello{Version: a.Version, Binary: a.id, Arch: runtime.GOARCH, Kernel: unix.ByteSliceToString(u.Release[:]),
		Clock: time.Now().UnixNano()}, nil
}

// BinaryID is the SHA-256 of the executable at path: two nslabs are the
// same when it is.
func BinaryID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read nslab's executable: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read nslab's executable: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// takePlan checks the coordinator's plan against the one this host
// computes from the file, and keeps the file for the verbs.
func (a *Agent) takePlan(r Request) error {
	if r.Plan == nil || r.Plan.Share(r.Host) == nil {
		return fmt.Errorf("the plan has no host %q", r.Host)
	}
	l, err := spec.Parse(r.Plan.Lab+".yaml", r.File)
	if err != nil {
		return fmt.Errorf("the lab's file does not parse here: %w", err)
	}
	mine, err := NewPlan(r.File, l)
	if err != nil {
		return err
	}
	if err := r.Plan.Agrees(mine); err != nil {
		return err
	}
	a.removeFile()
	dir, err := os.MkdirTemp("", "nslab-agent-")
	if err != nil {
		return fmt.Errorf("keep the lab's file: %w", err)
	}
	a.file = filepath.Join(dir, r.Plan.Lab+".yaml")
	if err := os.WriteFile(a.file, r.File, 0o600); err != nil {
		return fmt.Errorf("keep the lab's file: %w", err)
	}
	a.plan, a.host, a.name = r.Plan, r.Host, ""
	return nil
}

// removeFile removes the lab's file the agent kept, with its directory
// (a temporary directory of the agent's own, which nothing else uses).
func (a *Agent) removeFile() {
	if a.file != "" {
		_ = os.RemoveAll(filepath.Dir(a.file))
		a.file = ""
	}
}

// run runs nslab's verb args for the host's share (Argv's command line),
// the lab's file where FileArg stands, and returns what it printed and its exit
// code. It is interrupted (SIGTERM, as Ctrl-C: a deploy undoes itself)
// when ctx ends.
func (a *Agent) run(ctx context.Context, args []string) (Response, error) {
	lab := a.name
	if a.plan != nil {
		lab = a.plan.Lab
	}
	if lab == "" {
		return Response{}, errors.New("no plan yet: the coordinator sends the plan before any verb")
	}
	verb := ""
	if len(args) > 0 {
		verb = args[0]
	}
	if !slices.Contains(agentVerbs, verb) {
		return Response{}, fmt.Errorf("verb %q is not one an agent runs (it runs %s)", verb, strings.Join(agentVerbs, ", "))
	}
	args = slices.Clone(args)
	for i, s := range args {
		if s == FileArg && a.file == "" {
			return Response{}, fmt.Errorf("nslab %s: no file: the share was taken by its name alone", verb)
		}
		if s == FileArg {
			args[i] = a.file
		}
	}
	cmd := exec.CommandContext(ctx, a.Exe, a.Argv(a.host, lab, args)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Minute // a deploy's undo takes its time
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if slices.Contains(args, RemoteArg) {
		stop, err := a.relayAsks(ctx, cmd)
		if err != nil {
			return Response{}, err
		}
		defer stop()
	}
	err := a.startVerb(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	resp := Response{Stdout: out.String(), Stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		resp.Code = ee.ExitCode()
	case err != nil:
		return resp, fmt.Errorf("run nslab %s: %w", args[0], err)
	}
	return resp, nil
}

// startVerb starts a verb's process, as Start says.
func (a *Agent) startVerb(cmd *exec.Cmd) error {
	if a.Start != nil {
		return a.Start(cmd)
	}
	return cmd.Start()
}

// Take checks the coordinator's plan p against the one this host
// computes from file and keeps the file for Run, as host: what a plan
// request over the agent's channel does, for an agent told its plan
// another way (a Lab resource in Kubernetes).
func (a *Agent) Take(p *Plan, host string, file []byte) error {
	return a.takePlan(Request{Plan: p, Host: host, File: file})
}

// TakeName has Run work on host's share of the lab named lab without a
// plan or a file: for the verbs that need only the name (NameArg), such
// as a destroy of what a plan this host refuses may have left.
func (a *Agent) TakeName(lab, host string) {
	a.removeFile()
	a.plan, a.host, a.name = nil, host, lab
}

// Run runs nslab's verb args (FileArg standing for the lab's file) on
// the share taken, in this host's namespaces.
func (a *Agent) Run(ctx context.Context, args ...string) (Response, error) {
	return a.run(ctx, args)
}

// Close removes what Take kept.
func (a *Agent) Close() { a.removeFile() }
