package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// relayAsks gives the verb cmd (a bench) its ask and answer pipes (AskFD
// and AnswerFD) and relays each ask it writes to the coordinator, and the
// coordinator's answer back, until stop.
func (a *Agent) relayAsks(ctx context.Context, cmd *exec.Cmd) (stop func(), err error) {
	askR, askW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe for a bench's asks: %w", err)
	}
	ansR, ansW, err := os.Pipe()
	if err != nil {
		askR.Close()
		askW.Close()
		return nil, fmt.Errorf("pipe for a bench's asks: %w", err)
	}
	cmd.ExtraFiles = []*os.File{askW, ansR} // fds 3 and 4
	var wg sync.WaitGroup
	wg.Go(func() { a.relay(ctx, askR, ansW) })
	return func() {
		// The child has them (it ran); closing ours ends the relay once
		// the child's end is closed too.
		askW.Close()
		ansR.Close()
		wg.Wait()
		askR.Close()
		ansW.Close()
	}, nil
}

// relay passes each ask read from asks to the coordinator and writes its
// answer to answers.
func (a *Agent) relay(ctx context.Context, asks io.Reader, answers io.Writer) {
	dec, enc := json.NewDecoder(asks), json.NewEncoder(answers)
	for {
		var ask map[string]json.RawMessage
		if err := dec.Decode(&ask); err != nil {
			return // the verb ended
		}
		ans := Request{Error: "the coordinator is gone"}
		if err := a.s.send(Response{Ask: ask}); err == nil {
			select {
			case ans = <-a.answers:
			case <-ctx.Done():
			}
		}
		if err := enc.Encode(struct {
			Answers map[string]json.RawMessage `json:"answers"`
			Clocks  map[string]Clock           `json:"clocks,omitempty"`
			Error   string                     `json:"error,omitempty"`
		}{ans.Answers, ans.Clocks, ans.Error}); err != nil {
			return
		}
	}
}

// hopsReader is nslab's reader of this host's hops for a bench on
// another host (`nslab hops`, run as a verb is), kept between messages.
type hopsReader struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	errOut bytes.Buffer // read only once it has exited (wait)
	once   sync.Once
	werr   error
}

// readHops passes one message to this host's hops reader, started for
// the first, and returns its reply; a close ends the reader.
func (a *Agent) readHops(msg json.RawMessage) (json.RawMessage, error) {
	if a.plan == nil {
		return nil, errors.New("no plan yet: the coordinator sends the plan before any hops")
	}
	if a.hops == nil {
		h, err := a.startHops()
		if err != nil {
			return nil, err
		}
		a.hops = h
	}
	line, err := a.hops.ask(msg)
	var op struct{ Op string }
	_ = json.Unmarshal(msg, &op) // a message that does not parse is no close; its reply says why
	if op.Op == "close" || err != nil {
		a.hops.close()
		a.hops = nil
	}
	return line, err
}

func (a *Agent) startHops() (*hopsReader, error) {
	cmd := exec.Command(a.Exe, a.Argv(a.host, a.plan.Lab, []string{"hops", a.file})...)
	h := &hopsReader{cmd: cmd}
	cmd.Stderr = &h.errOut
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start nslab hops: %w", err)
	}
	h.in, h.out = in, bufio.NewReader(out)
	return h, nil
}

// wait reaps the reader once, however many ask.
func (h *hopsReader) wait() error {
	h.once.Do(func() { h.werr = h.cmd.Wait() })
	return h.werr
}

// ask writes one message and reads the reply's line.
func (h *hopsReader) ask(msg json.RawMessage) (json.RawMessage, error) {
	if _, err := h.in.Write(append(append([]byte{}, msg...), '\n')); err != nil {
		return nil, fmt.Errorf("nslab hops: %w", err)
	}
	line, err := h.out.ReadBytes('\n')
	if err != nil {
		_ = h.in.Close()
		if werr := h.wait(); werr != nil {
			return nil, fmt.Errorf("nslab hops ended: %w: %s", werr, strings.TrimSpace(h.errOut.String()))
		}
		return nil, fmt.Errorf("nslab hops ended: %w", err)
	}
	return json.RawMessage(line), nil
}

// close ends the reader: the end of its input, then SIGKILL if it has
// not exited within a few seconds. What it opened goes with it.
func (h *hopsReader) close() {
	if h == nil {
		return
	}
	_ = h.in.Close()
	done := make(chan struct{})
	go func() { _ = h.wait(); close(done) }() // its words matter to no one now
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = h.cmd.Process.Kill()
		<-done
	}
}
