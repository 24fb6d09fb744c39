package main

import (
	"bytes"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/ns"
)

// TestPrivilegedCapture captures on the router's ingress while the client
// pings the server three times: tcpdump reads the file back with the ARP
// exchange and the three echo requests and replies, and nslab says how many
// frames it captured. The capture helper is built for the test.
func TestPrivilegedCapture(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("no tcpdump to read the capture back (make test installs it)")
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, captureHelperName), "../nslab-capture").CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", captureHelperName, err, out)
	}
	c := newCLI(t)
	c.env = []string{"PATH=" + bin + ":" + os.Getenv("PATH")}
	file, name := labFile(t, "client-router-server.yaml")
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	if code, _, errOut := c.run("deploy", file); code != 0 {
		t.Fatalf("deploy: %s", errOut)
	}
	pcap := filepath.Join(t.TempDir(), "r.pcap")
	cmd := c.cmd("capture", "ns2:veth1-peer", "-w", pcap, "-c", "8")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, err := os.Stat(pcap); err == nil && st.Size() >= 24 { // the file header: the socket is open
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pcap header after 5 s: %s", stderr.String())
		}
	}
	got, err := labtest.Ping(ns.DefaultDir, name+"-ns1", netip.MustParseAddr("10.0.2.1"), 3, 2*time.Second)
	if err != nil || got != 3 {
		t.Fatalf("ping: %d replies, %v", got, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("capture: %v %s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("capture -c 8 did not end: %s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "8 frame(s) captured on ns2:veth1-peer") {
		t.Errorf("capture said %q", stderr.String())
	}
	out, err := exec.Command("tcpdump", "-nr", pcap).CombinedOutput()
	if err != nil {
		t.Fatalf("tcpdump -r: %v\n%s", err, out)
	}
	text := string(out)
	for what, want := range map[string]int{"ARP, Request who-has 10.0.1.254 tell 10.0.1.1": 1, "ARP, Reply 10.0.1.254 is-at": 1,
		"IP 10.0.1.1 > 10.0.2.1: ICMP echo request": 3, "IP 10.0.2.1 > 10.0.1.1: ICMP echo reply": 3} {
		if n := strings.Count(text, what); n != want {
			t.Errorf("%d × %q in the capture, want %d:\n%s", n, what, want, text)
		}
	}
}
