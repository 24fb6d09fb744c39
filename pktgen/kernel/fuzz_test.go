package kernel

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseStatus: any device file text parses or is refused, never
// panics; the seeds are the real kernel outputs of the seed documents.
func FuzzParseStatus(f *testing.F) {
	files, _ := filepath.Glob("testdata/seeds/*.txt")
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add("Params: count 1\nCurrent:\nResult: OK: 1(c1+d0) usec, 1 (60byte,0frags)\n  1pps 0Mb/sec (480bps) errors: 0\n")
	f.Fuzz(func(t *testing.T, text string) {
		st, err := ParseStatus(text)
		if err == nil && st == nil {
			t.Fatal("no status and no error")
		}
		r := ParseResult(text)
		if r.OK && r.Text == "" {
			t.Fatal("an OK result with no text")
		}
	})
}

// FuzzParseThread: any thread file text parses, never panics.
func FuzzParseThread(f *testing.F) {
	for _, s := range []string{
		"Running: \nStopped: veth1@0 \nResult: OK: add_device=veth1@0\n",
		"Running: veth1 veth2\nStopped:\nResult: Idle\n",
		"Result: ERROR: can not add device veth9\n",
		"", "Running:", "\n\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		th := ParseThread(text)
		for _, d := range append(th.Running, th.Stopped...) {
			if d == "" {
				t.Fatalf("an empty device name from %q", text)
			}
		}
	})
}
