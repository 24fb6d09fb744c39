package kernel

import (
	"os"
	"testing"
	"time"
)

// TestParseSeeds parses every pktgen output in the seed documents (real
// kernel output, some with their line breaks lost) and checks the numbers
// agree with each other as the kernel computes them.
func TestParseSeeds(t *testing.T) {
	cases := []struct {
		file               string
		sent, pps, mbps    uint64
		pktSize            int
		elapsed, idle      time.Duration
		dst, dstMAC, flags string
	}{
		{"seed000-count.txt", 1000000, 199989, 102, 64, 5000250 * time.Microsecond, 4381728 * time.Microsecond, "192.168.1.12", "7e:6c:0c:13:80:a6", ""},
		{"seed000-ctrlc.txt", 9637001, 200000, 102, 64, 48184996 * time.Microsecond, 42081825 * time.Microsecond, "192.168.1.12", "7e:6c:0c:13:80:a6", ""},
		{"seed000-sample01.txt", 1000, 563629, 270, 60, 1774 * time.Microsecond, 422 * time.Microsecond, "192.168.1.12", "7e:6c:0c:13:80:a6", "UDPSRC_RND NO_TIMESTAMP"},
		{"seed001-eth5.txt", 4405203, 29881, 14, 60, 147423202 * time.Microsecond, 61432 * time.Microsecond, "192.168.1.96", "00:0c:29:97:9b:be", ""},
		{"seed001-eth6.txt", 2846965, 19308, 9, 60, 147449261 * time.Microsecond, 45963 * time.Microsecond, "192.168.1.95", "00:0c:29:97:9b:b4", ""},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/seeds/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			st, err := ParseStatus(string(data))
			if err != nil {
				t.Fatal(err)
			}
			r := st.Result
			// not the clock: the figures pktgen's text gives
			if !r.OK || r.Sent != c.sent || r.PPS != c.pps || r.Mbps != c.mbps || r.PktSize != c.pktSize || r.Elapsed != c.elapsed || r.Idle != c.idle {
				t.Errorf("result %+v", r)
			}
			if st.Sent != r.Sent {
				t.Errorf("Current pkts-sofar %d, Result %d", st.Sent, r.Sent)
			}
			// The kernel rounds each part to microseconds on its own.
			// not the clock: the figures pktgen's text gives
			if d := r.Elapsed - r.Busy - r.Idle; d < 0 || d > time.Microsecond {
				t.Errorf("c+d = %v, elapsed %v", r.Busy+r.Idle, r.Elapsed)
			}
			if r.BPS != r.PPS*8*uint64(r.PktSize) || r.Mbps != r.BPS/1e6 {
				t.Errorf("bps %d for %d pps of %d bytes", r.BPS, r.PPS, r.PktSize)
			}
			if st.Params["dst_min"] != c.dst || st.Params["dst_mac"] != c.dstMAC || st.Params["dst_max"] == "src_min:" {
				t.Errorf("params %v", st.Params)
			}
			if got := joinFields(st.Flags); got != c.flags {
				t.Errorf("flags %q, want %q", got, c.flags)
			}
			// not the clock: the figures pktgen's text gives
			if d := int64(st.StoppedUS-st.StartedUS) - int64(c.elapsed/time.Microsecond); d < -2 || d > 2 {
				t.Errorf("started/stopped %d..%d vs elapsed %v", st.StartedUS, st.StoppedUS, c.elapsed)
			}
		})
	}
}

func joinFields(f []string) string {
	s := ""
	for i, x := range f {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s
}

func TestParseOtherResults(t *testing.T) {
	for text, ok := range map[string]bool{
		"Idle":                  false,
		"OK: count=100":         false,
		"ERROR: no such device": false,
		"OK: 1(c1+d0) usec, 1 (60byte,0frags)\n  1pps 0Mb/sec (480bps) errors: 0": true,
	} {
		if r := ParseResult(text); r.OK != ok || r.Text == "" {
			t.Errorf("%q: %+v", text, r)
		}
	}
	th := ParseThread("Running: veth1@0 \nStopped: veth1@1 \nResult: OK: add_device=veth1@1\n")
	if len(th.Running) != 1 || th.Running[0] != "veth1@0" || len(th.Stopped) != 1 || th.Result != "OK: add_device=veth1@1" {
		t.Errorf("thread %+v", th)
	}
	if _, err := ParseStatus("Result: Idle"); err == nil {
		t.Error("accepted a file with no sections")
	}
}
