package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// liveLab deploys the client-router-server example (or the one named)
// under a random name and returns its file and name.
func liveLab(t *testing.T, c *runner, example ...string) (path, name string) {
	t.Helper()
	path, name = labFile(t, append(example, "client-router-server.yaml")[0])
	if code, _, errOut := c.run("deploy", path); code != 0 {
		t.Fatalf("deploy: %d %s", code, errOut)
	}
	t.Cleanup(func() { c.run("destroy", "--name", name) })
	return path, name
}

// within reports whether got is within frac of want.
func within(got, want, frac float64) bool { return math.Abs(got-want) <= frac*want }

// benchReport runs a 20 kpps bench of the lab's forward run, with extra
// flags, and returns its JSON report's receive rate.
func benchPPS(t *testing.T, out string) float64 {
	t.Helper()
	var rep struct {
		PPS float64 `json:"pps"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.PPS == 0 {
		t.Fatalf("bench report: %v: %.300s", err, out)
	}
	return rep.PPS
}

func TestPrivilegedBenchLive(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	path, name := liveLab(t, c)
	code, out, errOut := c.run("bench", "--live", "-", "--traffic", "forward", "--rate", "20kpps", "--duration", "4s", path)
	if code != 0 {
		t.Fatalf("bench: %d\n%s", code, errOut)
	}
	events := report.ReadLive(strings.NewReader(out))
	if n := strings.Count(out, "\n"); len(events) != n || n < 4 {
		t.Fatalf("stdout is not the stream alone: %d events in %d lines:\n%s", len(events), n, out)
	}
	first, last := events[0], events[len(events)-1]
	if first.Type != report.LiveStart || last.Type != report.LiveEnd || len(last.Verdicts) != 1 || !strings.Contains(last.Report, "bottleneck:") {
		t.Fatalf("start and end lines: %+v ... %+v", first, last)
	}
	if !strings.Contains(errOut, "bottleneck:") {
		t.Fatalf("the report did not go to stderr with --live -:\n%s", errOut)
	}
	steady := 0
	for _, e := range events[1 : len(events)-1] {
		if e.Type != report.LiveInterval || e.Lab != name || len(e.Hops) != 4 || len(e.CPU) == 0 || len(e.CPU) != len(e.Softnet) {
			t.Fatalf("interval line: %+v", e)
		}
		// The interval's figures are the path's: the receiver got what
		// the sender sent in it (at most 20 kpps nothing drops here). The
		// rate the sender kept is the machine's: on a loaded one it falls
		// short of the 20 kpps asked, so it is not the yardstick.
		if send, recv := e.Hops[0], e.Hops[3]; send.Role == "sender" && recv.Role == "receiver" && send.TxPPS >= 1000 && within(recv.RxPPS, send.TxPPS, 0.1) {
			steady++
		}
	}
	if steady < 2 {
		t.Fatalf("fewer than two intervals where the receiver got what the sender sent: %s", out)
	}
	// The lab's live file has the same stream, for top, web and metrics.
	data, err := os.ReadFile(filepath.Join(c.stateDir, name, "bench.jsonl"))
	if err != nil || len(report.ReadLive(bytes.NewReader(data))) != len(events) {
		t.Fatalf("live file: %v, %d lines", err, bytes.Count(data, []byte("\n")))
	}
}

// duringBench runs a 6 s bench of the lab's forward run at 20 kpps and
// calls read every 0.5 s while it runs; it checks that at least two of
// the positive rates read are within 10% of the bench report's, and
// returns them and the report's rate.
func duringBench(t *testing.T, c *runner, path, what string, read func() float64) ([]float64, float64) {
	t.Helper()
	bench := c.cmd("bench", "--traffic", "forward", "--rate", "20kpps", "--duration", "6s", "--format", "json", path)
	var out bytes.Buffer
	bench.Stdout = &out
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	var seen []float64
	for deadline := time.Now().Add(7 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if v := read(); v > 0 {
			seen = append(seen, v)
		}
	}
	if err := bench.Wait(); err != nil {
		t.Fatal(err)
	}
	pps := benchPPS(t, out.String())
	agree := 0
	for _, v := range seen {
		if within(v, pps, 0.1) {
			agree++
		}
	}
	if agree < 2 {
		t.Fatalf("%s read %v pps: fewer than two within 10%% of the report's %.0f", what, seen, pps)
	}
	t.Logf("%s during the bench: %v pps; the report's %.0f", what, seen, pps)
	return seen, pps
}

// tmux runs a private tmux server for one test, its socket in the
// test's own directory.
type tmux struct {
	t      *testing.T
	socket string
	dir    string // TMUX_TMPDIR
}

func newTmux(t *testing.T) *tmux {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed (make deps installs it)")
	}
	x := &tmux{t: t, socket: labtest.Name("tmux"), dir: t.TempDir()}
	t.Cleanup(func() { x.command("kill-server").Run() })
	return x
}

func (x *tmux) command(args ...string) *exec.Cmd {
	c := exec.Command("tmux", append([]string{"-L", x.socket}, args...)...)
	c.Env = append(os.Environ(), "TMUX_TMPDIR="+x.dir)
	return c
}

func (x *tmux) do(args ...string) string {
	x.t.Helper()
	out, err := x.command(args...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// topRate finds the rx pps of interface ifname of node in a top screen.
func topRate(screen, node, ifname string) (float64, bool) {
	for _, line := range strings.Split(screen, "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == node && f[1] == ifname {
			v, err := strconv.ParseFloat(f[2], 64)
			return v, err == nil
		}
	}
	return 0, false
}

func TestPrivilegedTopTmux(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	path, name := liveLab(t, c)
	x := newTmux(t)
	x.do("new-session", "-d", "-s", "top", "-x", "160", "-y", "50",
		fmt.Sprintf("env NSLAB_RUN_MAIN=1 NSLAB_STATE_DIR=%s %s top %s", c.stateDir, c.bin, name))
	duringBench(t, c, path, "top's router ingress (ns2:veth1-peer)", func() float64 {
		v, _ := topRate(x.do("capture-pane", "-p", "-t", "top"), "ns2", "veth1-peer")
		return v
	})
	// A key press changes the sort, and says so.
	x.do("send-keys", "-t", "top", "d")
	time.Sleep(300 * time.Millisecond)
	if screen := x.do("capture-pane", "-p", "-t", "top"); !strings.Contains(screen, "sort: drops") {
		t.Fatalf("after d:\n%s", screen)
	}
	x.do("send-keys", "-t", "top", "q")
}

// withWebHelper builds nslab-web and puts it on the runner's PATH, where
// nslab web and metrics find it.
func withWebHelper(t *testing.T, c *runner) {
	t.Helper()
	c.env = append(c.env, "PATH="+webHelperDir(t)+":"+os.Getenv("PATH"))
}

// freePort is a loopback address with a port free now.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServer starts nslab VERB ... --listen ADDR and waits for it to
// answer at path.
func startServer(t *testing.T, c *runner, addr, path string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := c.cmd(append(args, "--listen", addr)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + path); err == nil {
			resp.Body.Close()
			return cmd
		}
	}
	t.Fatalf("%v did not answer: %s", args, errb.String())
	return nil
}

// heldFiles is what process pid holds open: the inodes of its files
// (a namespace file's is the namespace's, as net:[INODE]) and how many
// sockets (a netlink socket opened in a namespace keeps it alive too).
func heldFiles(t *testing.T, pid int) (map[string]bool, int) {
	inodes, sockets := map[string]bool{}, 0
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if l, _ := os.Readlink(filepath.Join(dir, e.Name())); strings.HasPrefix(l, "socket:") {
			sockets++
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join(dir, e.Name()), &st) == nil {
			inodes[fmt.Sprintf("net:[%d]", st.Ino)] = true
		}
	}
	return inodes, sockets
}

// labNamespaces are the lab's namespaces as net:[INODE], read while it
// is deployed.
func labNamespaces(t *testing.T, c *runner, name string) []string {
	var ids []string
	for _, nsName := range labNodes(t, c, name) {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(ns.DefaultDir, nsName), &st); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, fmt.Sprintf("net:[%d]", st.Ino))
	}
	return ids
}

func TestPrivilegedWebLifecycle(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	withWebHelper(t, c)
	_, name := liveLab(t, c)
	ids := labNamespaces(t, c, name)
	addr := freePort(t)
	srv := startServer(t, c, addr, "/", "web", name, "--interval", "200ms")
	scrapeLines(t, "http://"+addr+"/metrics", "") // its metrics hold the lab too
	held, sockets := heldFiles(t, srv.Process.Pid)
	for _, id := range ids {
		if !held[id] {
			t.Fatalf("the server does not hold %s open while the lab is deployed: %v", id, held)
		}
	}
	if code, _, errOut := c.run("destroy", "--name", name); code != 0 {
		t.Fatal(errOut)
	}
	var still []string
	socketsNow := sockets
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		held, socketsNow = heldFiles(t, srv.Process.Pid)
		still = nil
		for _, id := range ids {
			if held[id] {
				still = append(still, id)
			}
		}
		if len(still) == 0 && socketsNow <= sockets-len(ids) {
			break
		}
	}
	if len(still) > 0 || socketsNow > sockets-len(ids) {
		t.Fatalf("the server keeps the destroyed lab's namespaces alive: %v open, %d sockets of %d before", still, socketsNow, sockets)
	}
	srv.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not exit on SIGTERM")
	}
}

func TestListenRefusesEveryAddress(t *testing.T) {
	c := newCLI(t)
	code, _, errOut := c.run("web", "--listen", ":8080", "x")
	if code != 2 || !strings.Contains(errOut, "0.0.0.0:8080") || !strings.Contains(errOut, "127.0.0.1:8080") {
		t.Fatalf("--listen :8080: %d %s", code, errOut)
	}
	var b bytes.Buffer
	if err := checkListen("0.0.0.0:9477", &b); err != nil || !strings.Contains(b.String(), "other machines can reach it") {
		t.Fatalf("0.0.0.0: %v %q", err, b.String())
	}
	b.Reset()
	if err := checkListen("127.0.0.1:9477", &b); err != nil || b.Len() != 0 {
		t.Fatalf("loopback: %v %q", err, b.String())
	}
}

// scrapeLines reads a scrape's lines.
func scrapeLines(t *testing.T, url, accept string) (string, string) {
	req, _ := http.NewRequest("GET", url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String(), resp.Header.Get("Content-Type")
}

// kernelCounters reads rx and tx packets of every interface but lo of
// every node of the lab, by "node:if", from the kernel.
func kernelCounters(t *testing.T, nodes map[string]string) map[string][2]uint64 {
	out := map[string][2]uint64{}
	for node, nsName := range nodes {
		h := labtest.Handle(t, ns.DefaultDir, nsName)
		links, err := h.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if a := l.Attrs(); a.Name != "lo" {
				out[node+":"+a.Name] = [2]uint64{a.Statistics.RxPackets, a.Statistics.TxPackets}
			}
		}
	}
	return out
}

// labNodes maps the lab's nodes to their namespaces.
func labNodes(t *testing.T, c *runner, name string) map[string]string {
	_, out, _ := c.run("inspect", "--name", name, "--format", "json")
	var info struct {
		Nodes []struct{ Node, Namespace string } `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, n := range info.Nodes {
		m[n.Node] = n.Namespace
	}
	return m
}

func TestPrivilegedMetricsScrape(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	withWebHelper(t, c)
	path, name := liveLab(t, c)
	nodes := labNodes(t, c, name)
	addr := freePort(t)
	startServer(t, c, addr, "/metrics", "metrics", name)
	bench := c.cmd("bench", "--traffic", "forward", "--rate", "20kpps", "--duration", "4s", "-q", path)
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	defer bench.Wait()
	time.Sleep(2500 * time.Millisecond) // a bench interval published
	before := kernelCounters(t, nodes)
	text, ctype := scrapeLines(t, "http://"+addr+"/metrics", "")
	after := kernelCounters(t, nodes)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the text format does not parse (%s): %v", ctype, err)
	}
	got := map[string][2]uint64{}
	for i, fam := range []string{"nslab_interface_receive_packets_total", "nslab_interface_transmit_packets_total"} {
		for _, m := range fams[fam].GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["lab"] == name {
				v := got[l["node"]+":"+l["interface"]]
				v[i] = uint64(m.GetCounter().GetValue())
				got[l["node"]+":"+l["interface"]] = v
			}
		}
	}
	if len(got) != 4 || len(before) != 4 {
		t.Fatalf("interfaces scraped %v, in the kernel %v", got, before)
	}
	moved := false
	for k, v := range got {
		for i := range 2 {
			if v[i] < before[k][i] || v[i] > after[k][i] {
				t.Errorf("%s: scraped %d, the kernel had %d before the scrape and %d after", k, v[i], before[k][i], after[k][i])
			}
			moved = moved || after[k][i] > before[k][i]
		}
	}
	if !moved {
		t.Fatal("no counter moved during the scrape: the bench did not run")
	}
	for _, fam := range []string{"nslab_softnet_dropped_total", "nslab_cpu_seconds_total", "nslab_ip_mib_total", "nslab_conntrack_entries", "nslab_bench_hop_receive_pps"} {
		if len(fams[fam].GetMetric()) == 0 {
			t.Errorf("no %s", fam)
		}
	}
	if g := fams["nslab_bench_running"].GetMetric(); len(g) != 1 || g[0].GetGauge().GetValue() != 1 {
		t.Errorf("nslab_bench_running during a bench: %v", g)
	}
	om, omType := scrapeLines(t, "http://"+addr+"/metrics", "application/openmetrics-text; version=1.0.0")
	if !strings.HasPrefix(omType, "application/openmetrics-text") || !strings.HasSuffix(om, "# EOF\n") {
		t.Errorf("OpenMetrics asked for, %s given, ending %q", omType, om[max(0, len(om)-20):])
	}
}

// browser starts headless Chromium (Debian's) with its own profile and no
// background networking (this machine's network is closed: it would try
// Google's hosts at every start), and records every URL the page asks
// for. Its temporary files go in the test's own directory (Chromium
// leaves an org.chromium.Chromium.* directory in TMPDIR when it is
// stopped).
func browser(t *testing.T) (context.Context, *[]string) {
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		t.Fatal("chromium is not installed (make deps installs it)")
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath("/usr/bin/chromium"), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.Env("TMPDIR=" + t.TempDir()), chromedp.WindowSize(1200, 800),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true)}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	var mu sync.Mutex
	urls := &[]string{}
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			*urls = append(*urls, e.Request.URL)
			mu.Unlock()
		}
	})
	if err != nil { // Listen starts the browser; chromedp enables its network events

		t.Fatalf("start chromium: %v", err)
	}
	return ctx, urls
}

// TestPrivilegedWebChromium drives the live page in headless Chromium
// during a bench through a router whose egress is shaped to 4 Mbit/s
// (tbf), so that it drops about half of the 20 kpps offered at r1:eth1:
// every figure the page shows (the links' labels and charts, the drop
// badges, the bench's receive rate) is the view's that the page showed,
// as the server's sampler sent it; the drops are drawn at r1:eth1's end
// of its link and nowhere else; the verdict and what was measured (the
// file's SHA-256) are on the page after the bench; and the page asks
// nothing of any other address. With NSLAB_WEB_SCREENSHOT set, it saves
// a screenshot taken 5 s into the bench there (docs/images/web.png).
func TestPrivilegedWebChromium(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	c := newCLI(t)
	withWebHelper(t, c)
	path, name := liveLab(t, c, "forwarding-benchmark.yaml") // its router is placed: the page colours it
	if code, _, errOut := c.run("impair", name+":r1:eth1", "--rate", "4Mbit"); code != 0 {
		t.Fatalf("impair: %s", errOut)
	}
	addr := freePort(t)
	startServer(t, c, addr, "/", "web", name, "--interval", "500ms")
	views := watchEvents(t, addr)
	ctx, urls := browser(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860), chromedp.Navigate("http://"+addr+"/"), chromedp.WaitVisible(chromedp.ID("label-0")),
		chromedp.WaitVisible(chromedp.CSS(`body[data-views]`))); err != nil {
		t.Fatalf("load the page: %v", err)
	}
	var shot []byte
	var shown []pageFigures
	positive := 0
	duringBench(t, c, path, "the router's egress link's label", func() float64 {
		f := readPage(t, ctx)
		shown = append(shown, f)
		if f.Labels[1][0] > 0 {
			if positive++; positive == 10 { // 5 s into the bench: its charts have a history
				var err error
				if shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err != nil {
					t.Fatal(err)
				}
			}
		}
		return f.Labels[1][0]
	})
	// Every figure the page showed is its view's, as the sampler sent it.
	dropped, checked := 0, 0
	for _, f := range shown {
		v, ok := views.at(f.ViewTime)
		if !ok {
			t.Errorf("the page showed a view of %s that the server never sent", f.ViewTime)
			continue
		}
		checked++
		byIf := map[string]viewIf{}
		for _, i := range v.Interfaces {
			byIf[i.Node+":"+i.Interface] = i
		}
		for n, ends := range [][2]string{{"client:eth0", "r1:eth0"}, {"r1:eth1", "server:eth0"}} {
			a, b := byIf[ends[0]], byIf[ends[1]]
			want := [4]float64{a.TxPPS, b.TxPPS, float64(a.drops()), float64(b.drops())}
			for k, what := range []string{"label A to B", "label B to A", "drop badge at A", "drop badge at B"} {
				if math.Abs(f.Labels[n][k]-want[k]) > 0.051 {
					t.Errorf("view %s, link %d's %s shows %v, the sampler's %v", f.ViewTime, n, what, f.Labels[n][k], want[k])
				}
			}
			if f.Charts[n] != [2]float64{f.Labels[n][0], f.Labels[n][1]} {
				t.Errorf("view %s, link %d's chart ends at %v, its labels say %v", f.ViewTime, n, f.Charts[n], f.Labels[n][:2])
			}
		}
		if f.Labels[1][2] > 0 {
			dropped++
		}
		for _, other := range []float64{f.Labels[0][2], f.Labels[0][3], f.Labels[1][3]} {
			if other != 0 {
				t.Errorf("view %s: drops shown away from r1:eth1: %v", f.ViewTime, f.Labels)
			}
		}
		if f.BenchPPS >= 0 && math.Abs(f.BenchPPS-byIf["server:eth0"].RxPPS) > 0.051 {
			t.Errorf("view %s: the bench's line says %v pps received, the sampler's server:eth0 %v", f.ViewTime, f.BenchPPS, byIf["server:eth0"].RxPPS)
		}
	}
	if checked < 5 || dropped < 3 {
		t.Errorf("of %d views checked, %d showed the shaper's drops at r1:eth1: the premise (4 Mbit/s under 9.6 offered) failed", checked, dropped)
	}
	time.Sleep(1500 * time.Millisecond) // the bench's end line, sampled
	verdict, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("verdicts")))
	if err != nil {
		t.Fatal(err)
	}
	identity, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("identity")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(verdict, "forward: ") || !strings.Contains(identity, "sha256 "+fileSHA256(t, path)) {
		t.Errorf("the bench's verdict %q and what it measured %q are not on the page", verdict, identity)
	}
	for _, u := range *urls {
		if !strings.HasPrefix(u, "http://"+addr+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page asked for %s, beyond the listen address", u)
		}
	}
	if p := os.Getenv("NSLAB_WEB_SCREENSHOT"); p != "" && shot != nil {
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// pageFigures are the figures the live page shows, read from its DOM at
// one moment: the view it shows (its time), each link's labels and drop
// badges (A to B, B to A, drops at A, at B), the last point of each
// link's chart (A to B, B to A), and the bench's receive rate (-1: none
// shown).
type pageFigures struct {
	ViewTime string
	Labels   [2][4]float64
	Charts   [2][2]float64
	BenchPPS float64
}

// readPage reads the page's figures in one script, so that they are of
// one view.
func readPage(t *testing.T, ctx context.Context) pageFigures {
	t.Helper()
	js := `(function () {
		const num = (id, key) => { const e = document.getElementById(id); return e && e.dataset[key] ? Number(e.dataset[key]) : 0; };
		const link = n => [num("label-" + n, "abPps"), num("label-" + n, "baPps"), num("drop-" + n + "-a", "count"), num("drop-" + n + "-b", "count")];
		const chart = n => [num("chart-" + n, "abPps"), num("chart-" + n, "baPps")];
		const rate = document.getElementById("bench-rate");
		return JSON.stringify({ViewTime: document.body.dataset.viewTime || "", Labels: [link(0), link(1)], Charts: [chart(0), chart(1)],
			BenchPPS: rate && rate.dataset.pps ? Number(rate.dataset.pps) : -1});
	})()`
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatal(err)
	}
	var f pageFigures
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		t.Fatalf("the page's figures: %v: %s", err, s)
	}
	return f
}

// viewIf is an interface of a view as the server sends it.
type viewIf struct {
	Node       string  `json:"node"`
	Interface  string  `json:"interface"`
	RxPPS      float64 `json:"rx_pps"`
	TxPPS      float64 `json:"tx_pps"`
	RxDrops    uint64  `json:"rx_drops"`
	TxDrops    uint64  `json:"tx_drops"`
	QdiscDrops uint64  `json:"qdisc_drops"`
}

func (i viewIf) drops() uint64 { return i.RxDrops + i.TxDrops + i.QdiscDrops }

// sentViews are the views the server sent, by their time.
type sentViews struct {
	mu sync.Mutex
	by map[string]struct{ Interfaces []viewIf }
}

func (s *sentViews) at(time string) (struct{ Interfaces []viewIf }, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.by[time]
	return v, ok
}

// watchEvents reads the server's events, as a page does, until the test
// ends, keeping every view it sent.
func watchEvents(t *testing.T, addr string) *sentViews {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	s := &sentViews{by: map[string]struct{ Interfaces []viewIf }{}}
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m struct {
				Type string `json:"type"`
				View *struct {
					Time       string   `json:"time"`
					Interfaces []viewIf `json:"interfaces"`
				} `json:"view"`
			}
			if json.Unmarshal([]byte(data), &m) == nil && m.View != nil {
				s.mu.Lock()
				s.by[m.View.Time] = struct{ Interfaces []viewIf }{m.View.Interfaces}
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// fileSHA256 is the hex SHA-256 of the file at path.
func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

// TestLiveFileAfterTruncate: a second bench on the lab truncates the live
// file; the first one's next line goes to its end, with no hole of zeros
// before it that a reader would stop at.
func TestLiveFileAfterTruncate(t *testing.T) {
	m := &lab.Manager{StateDir: t.TempDir()}
	s, err := openLive(m, "x", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.send(report.LiveEvent{Type: report.LiveStart, Traffic: "a"})
	s.send(report.LiveEvent{Type: report.LiveInterval, Traffic: "a", At: 1})
	if err := os.Truncate(m.LiveFile("x"), 0); err != nil { // as the second bench opens it
		t.Fatal(err)
	}
	s.send(report.LiveEvent{Type: report.LiveInterval, Traffic: "a", At: 2})
	data, err := os.ReadFile(m.LiveFile("x"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(data, 0) >= 0 || len(report.ReadLive(bytes.NewReader(data))) != 1 {
		t.Fatalf("after the truncation: %q", data)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.LiveFile("x")); !os.IsNotExist(err) {
		t.Fatalf("the live file of a lab that is not deployed stays: %v", err)
	}
}
