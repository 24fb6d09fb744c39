package kernel

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Status is a pktgen device file (/proc/net/pktgen/DEV) parsed: its
// parameters, its progress and its result.
type Status struct {
	Params map[string]string // "count", "min_pkt_size", "dst_min", ... as shown
	Flags  []string

	// Current
	Sent      uint64 // pkts-sofar
	Errors    uint64
	StartedUS uint64
	StoppedUS uint64
	IdleUS    uint64
	SeqNum    uint64

	Result Result
}

// Result is the kernel's "Result:" text of a device, parsed.
type Result struct {
	Text    string // the Result: text as the kernel wrote it
	OK      bool   // a finished run: "Result: OK: <usec>(c..+d..) usec, ..."
	Elapsed time.Duration
	Busy    time.Duration // the c part: time not idle
	Idle    time.Duration
	Sent    uint64
	PktSize int // pkt_size (frame without FCS)
	Frags   int
	PPS     uint64
	Mbps    uint64 // pps*8*pkt_size/1e6: no FCS, preamble or gap
	BPS     uint64
	Errors  uint64
}

var (
	runResultRE = lazyRE(`^OK:\s+(\d+)\(c(\d+)\+d(\d+)\)\s+usec,\s+(\d+)\s+\((\d+)byte,(\d+)frags\)\s+(\d+)pps\s+(\d+)Mb/sec\s+\((\d+)bps\)\s+errors:\s+(\d+)`)
	spaceRE     = lazyRE(`\s+`)
	keyRE       = lazyRE(`^[a-z_-]+:$`) // "dst_max:", not an address like "fd00::"
)

// ParseStatus parses a device file. It accepts the kernel's layout and the
// same text with its line breaks lost (as pasted in documents).
func ParseStatus(text string) (*Status, error) {
	params, rest, ok := strings.Cut(text, "Current:")
	if !ok || !strings.Contains(params, "Params:") {
		return nil, fmt.Errorf("not a pktgen device file: no Params:/Current: sections")
	}
	current, result, _ := strings.Cut(rest, "Result:")
	st := &Status{Params: map[string]string{}}
	params = strings.TrimSpace(params[strings.Index(params, "Params:")+len("Params:"):])
	params, flags, _ := strings.Cut(params, "Flags:")
	st.Flags = strings.Fields(flags)
	parsePairs(params, st.Params)
	cur := map[string]string{}
	parsePairs(current, cur)
	num := func(k string) uint64 {
		v, _ := strconv.ParseUint(strings.TrimSuffix(cur[k], "us"), 10, 64)
		return v
	}
	st.Sent, st.Errors, st.SeqNum = num("pkts-sofar"), num("errors"), num("seq_num")
	st.StartedUS, st.StoppedUS, st.IdleUS = num("started"), num("stopped"), num("idle")
	st.Result = ParseResult(result)
	return st, nil
}

// parsePairs reads "key: value" and "key value" pairs (pktgen writes
// "count 100" without a colon and leaves empty values such as "dst_max:").
func parsePairs(s string, into map[string]string) {
	f := strings.Fields(s)
	for i := 0; i < len(f); i++ {
		key := strings.TrimSuffix(f[i], ":")
		hasColon := key != f[i]
		if i+1 < len(f) && (!hasColon || !keyRE().MatchString(f[i+1])) {
			into[key] = f[i+1]
			i++
			continue
		}
		into[key] = ""
	}
}

// ParseResult parses the text after "Result:".
func ParseResult(text string) Result {
	text = strings.TrimSpace(spaceRE().ReplaceAllString(text, " "))
	r := Result{Text: text}
	m := runResultRE().FindStringSubmatch(text)
	if m == nil {
		return r
	}
	n := make([]uint64, len(m))
	for i := 1; i < len(m); i++ {
		n[i], _ = strconv.ParseUint(m[i], 10, 64)
	}
	r.OK = true
	r.Elapsed, r.Busy, r.Idle = time.Duration(n[1])*time.Microsecond, time.Duration(n[2])*time.Microsecond, time.Duration(n[3])*time.Microsecond
	r.Sent, r.PktSize, r.Frags = n[4], int(n[5]), int(n[6])
	r.PPS, r.Mbps, r.BPS, r.Errors = n[7], n[8], n[9], n[10]
	r.Text = m[0]
	return r
}

// Thread is a kpktgend_N file parsed.
type Thread struct {
	Running []string
	Stopped []string
	Result  string
}

// ParseThread parses a thread file ("Running: ...", "Stopped: ...",
// "Result: ...").
func ParseThread(text string) Thread {
	var t Thread
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "Running:"):
			t.Running = strings.Fields(strings.TrimPrefix(line, "Running:"))
		case strings.HasPrefix(line, "Stopped:"):
			t.Stopped = strings.Fields(strings.TrimPrefix(line, "Stopped:"))
		case strings.HasPrefix(line, "Result:"):
			t.Result = strings.TrimSpace(strings.TrimPrefix(line, "Result:"))
		}
	}
	return t
}

// lazyRE compiles a regular expression the first time it is used, not at
// program start: every nslab command pays for package initialisation.
func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
