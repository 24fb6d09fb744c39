package fleet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"sync"
)

// The protocol: the coordinator writes one JSON Request per line on the
// agent's standard input, and the agent answers each with one JSON
// Response line on its standard output, in order. The agent's standard
// error is the ssh session's, and only carries what goes wrong before it
// speaks.

// Ops the agent answers.
const (
	OpHello = "hello" // who are you: version, binary, kernel, clock
	OpPlan  = "plan"  // this is the lab's plan and file, and the host you are
	OpRun   = "run"   // run an nslab verb on your share
	OpMTU   = "mtu"   // is a packet of this size with DF set answered from there
)

// Request is one call to an agent.
type Request struct {
	Op   string     `json:"op"`
	Plan *Plan      `json:"plan,omitempty"`
	Host string     `json:"host,omitempty"`
	File []byte     `json:"file,omitempty"`
	Args []string   `json:"args,omitempty"` // OpRun: the verb and its arguments, with stand-ins (FileArg, NameArg, QuietArg)
	To   netip.Addr `json:"to,omitzero"`    // OpMTU: the other host's underlay address
	Size int        `json:"size,omitempty"` // OpMTU: the IP packet's size
}

// Stand-ins in a run's arguments, which the agent's command line spells:
// FileArg is the path of the lab's file on the agent's host, NameArg the
// lab named by its name, QuietArg a verb asked to print no progress.
const (
	FileArg  = "@lab"
	NameArg  = "@name"
	QuietArg = "@quiet"
)

// Response is an agent's answer. Error is set when the call itself failed
// (a verb that ran and failed has its exit code and words in Code and
// Stderr instead).
type Response struct {
	Error   string `json:"error,omitempty"`
	Hello   *Hello `json:"hello,omitempty"`
	Code    int    `json:"code"`
	Stdout  string `json:"stdout,omitempty"`
	Stderr  string `json:"stderr,omitempty"`
	Fits    bool   `json:"fits,omitempty"`    // OpMTU: a packet of Size was answered
	Largest int    `json:"largest,omitempty"` // OpMTU: the largest size answered, when Size was not
}

// Hello is what an agent says of itself.
type Hello struct {
	Version string `json:"version"`
	Binary  string `json:"binary"` // SHA-256 of the agent's executable
	Arch    string `json:"arch"`
	Kernel  string `json:"kernel"`
	Clock   int64  `json:"clock_unix_ns"` // the agent's clock when it answered
}

// stream is one end of the protocol: requests or responses written and
// read one line each.
type stream struct {
	mu  sync.Mutex
	enc *json.Encoder
	dec *json.Decoder
}

func newStream(r io.Reader, w io.Writer) *stream {
	return &stream{enc: json.NewEncoder(w), dec: json.NewDecoder(bufio.NewReader(r))}
}

func (s *stream) send(v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enc.Encode(v); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

func (s *stream) recv(v any) error { return s.dec.Decode(v) }
