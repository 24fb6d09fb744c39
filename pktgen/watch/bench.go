package watch

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/nslab/nslab/pktgen/report"
)

// BenchStatus is the bench that runs, or last ran, on a lab, as its live
// file tells: when it started, its last interval line, and how it ended.
type BenchStatus struct {
	Running bool              `json:"running"`
	PID     int               `json:"pid"`
	Traffic string            `json:"traffic"`
	Started time.Time         `json:"started"`
	Last    *report.LiveEvent `json:"last,omitempty"` // the latest interval line
	End     *report.LiveEvent `json:"end,omitempty"`  // nil while it runs
}

// benchTail reads a lab's live file as it grows: only the lines added
// since the last read, from the start again when a new bench truncated it.
type benchTail struct {
	path   string
	offset int64
	status *BenchStatus
}

// read returns the bench's status now (nil: no bench has written the
// file).
func (t *benchTail) read() *BenchStatus {
	f, err := os.Open(t.path)
	if err != nil {
		t.offset, t.status = 0, nil
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() < t.offset {
		t.offset, t.status = 0, nil
	}
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return t.status
	}
	data, _ := io.ReadAll(f)
	// Only whole lines: the writer may be half-way through one.
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	t.offset += int64(len(data))
	for _, e := range report.ReadLive(bytes.NewReader(data)) {
		t.apply(e)
	}
	if s := t.status; s != nil && s.Running && !processAlive(s.PID) {
		s.Running = false // killed before its end line
	}
	return t.status
}

// apply takes one line into the status.
func (t *benchTail) apply(e report.LiveEvent) {
	switch e.Type {
	case report.LiveStart:
		t.status = &BenchStatus{Running: true, PID: e.PID, Traffic: e.Traffic, Started: e.Time}
	case report.LiveInterval:
		if t.status != nil {
			t.status.Last = &e
		}
	case report.LiveEnd:
		if t.status != nil {
			t.status.Running, t.status.End = false, &e
		}
	}
}

// processAlive reports whether pid names a running process.
func processAlive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return pid > 0 && err == nil
}
