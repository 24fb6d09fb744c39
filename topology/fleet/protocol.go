package fleet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"
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
	// OpHops is a message for the reader of this host's hops in a bench
	// run on another host (package remote's, relayed as it is).
	OpHops = "hops"
	// OpAnswer answers the Ask of a verb that runs (a bench's, for the
	// hops of other hosts): each host's answer to its message.
	OpAnswer = "answer"
)

// A bench the agent runs with RemoteArg may ask for other hosts' hops:
// it writes one JSON object per line on AskFD, host name to message, and
// reads each answer (a JSON object: "answers", host name to reply;
// "clocks", host name to Clock against the asking host's; "error") from
// AnswerFD. The agent relays each ask to the coordinator as
// a Response with Ask set; the coordinator sends each message to its
// host's agent as OpHops, and answers with OpAnswer. A host that cannot
// be asked is answered {"error": "..."}.
const (
	AskFD    = 3
	AnswerFD = 4
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
	// OpHops: the message for the hops' reader; OpAnswer: each host's
	// answer, and Error when the ask could not be relayed at all.
	Body    json.RawMessage            `json:"body,omitempty"`
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
	Error   string                     `json:"error,omitempty"`
	// Clocks (OpAnswer): each host's clock less the asking host's, as
	// the coordinator measured them at its hellos.
	Clocks map[string]Clock `json:"clocks,omitempty"`
}

// Clock is a host's clock less another's, and the most it is off by.
type Clock struct {
	Offset time.Duration `json:"offset_ns"`
	Error  time.Duration `json:"error_ns"`
}

// Stand-ins in a run's arguments, which the agent's command line spells:
// FileArg is the path of the lab's file on the agent's host, NameArg the
// lab named by its name, QuietArg a verb asked to print no progress,
// RemoteArg a bench that reads other hosts' hops.
const (
	FileArg  = "@lab"
	NameArg  = "@name"
	QuietArg = "@quiet"
	// RemoteArg lets a bench ask for the hops on other hosts (AskFD).
	RemoteArg = "@remote"
	// OwnerArg, followed by the owner, deploys, applies or destroys for
	// that owner (see Owned): a lab of the same name another owner
	// deployed is left alone (ExitNotOwner).
	OwnerArg = "@owner="
	// JSONArg asks a verb for its JSON (--format json).
	JSONArg = "@json"
	// StrictArg asks a deploy to be strict (a line a daemon or a
	// startup script refuses fails it).
	StrictArg = "@strict"
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
	// Ask is, while a verb runs, not its answer but its ask for other
	// hosts' hops (host name to message); the coordinator answers with
	// OpAnswer and the verb's answer follows. Body is OpHops's reply.
	Ask  map[string]json.RawMessage `json:"ask,omitempty"`
	Body json.RawMessage            `json:"body,omitempty"`
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

// ExitNotOwner is the exit code of nslab destroy or apply --owner when the
// lab of that name here is another owner's, left alone: the agent acting
// for the owner asked then never built a share of it here.
const ExitNotOwner = 3

// Owned is the stand-in of a verb run for owner.
func Owned(owner string) string { return OwnerArg + owner }
