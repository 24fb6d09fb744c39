// Command nslab-bench-topology measures how fast nslab starts and how fast
// it deploys and destroys labs, against the iproute2 shell script a user
// would otherwise write for the same lab (nslab deploy --dry-run and
// destroy --dry-run give it), in the same run on the same machine (make
// bench-topology): as library calls, and as whole nslab processes.
//
// Labs: (a) the client-router-server example; (b) a generated chain of N
// namespaces joined by N-1 veth pairs with addresses, routes and forwarding
// (nslab generate chain --routes). Then the cost per node of chains of
// 100, 250, 1,000 and 10,000 nodes, 3 rounds, as whole nslab deploy and destroy
// processes, with each process's peak memory and the kernel memory the
// lab holds (see scale.go), and what fresh memory costs this machine
// (memory.go). After every run it checks that no namespace of the run
// remains.
//
// Namespaces are named in /run/netns on a tmpfs, as on most systems: when
// this machine's is on a disk file system the bench runs in a mount
// namespace of its own with a tmpfs there (netns.go); -netns host
// measures on the machine's own.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nslab/nslab/internal/labname"
	"github.com/nslab/nslab/internal/nlsafe"
	"github.com/nslab/nslab/topology/generate"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

func main() {
	runs := flag.Int("runs", 20, "runs of the small lab (median reported)")
	chainRuns := flag.Int("chain-runs", 3, "runs of the chain lab with nslab (median reported)")
	chainLen := flag.Int("chain", 1000, "namespaces in the chain lab")
	example := flag.String("example", "examples/client-router-server.yaml", "the small lab")
	nslabBin := flag.String("nslab", "bin/nslab", "nslab binary, to time whole commands too")
	scale := flag.String("scale", "100,250,1000,10000", "chain sizes whose cost per node is measured (\"\": none)")
	scaleRounds := flag.Int("scale-rounds", 3, "rounds of the chain sizes (each size's spread is over them)")
	netns := flag.String("netns", "tmpfs", "where namespaces are named: tmpfs (/run/netns on a tmpfs, mounted for the run in a mount namespace of its own when the machine's is not one) or host (this machine's /run/netns as it is)")
	flag.Parse()
	if err := lab.CheckPrivileges(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	where, err := placeNamespaces(*netns)
	if err != nil {
		fail(err)
	}
	fmt.Println(where)
	data, err := os.ReadFile(*example)
	if err != nil {
		fail(err)
	}
	starts, err := measureStartup(*nslabBin)
	if err != nil {
		fail(err)
	}
	printStartup(starts)
	fmt.Println()
	var rows []row
	rows = append(rows, measure("(a) client-router-server", data, *runs, *runs, *nslabBin))
	rows = append(rows, measure(fmt.Sprintf("(b) chain of %d", *chainLen), chainYAML(*chainLen), *chainRuns, 1, ""))
	print(rows)
	targets(starts, rows)
	if *scale != "" {
		scaleRows := measureScale(*nslabBin, *scale, *scaleRounds)
		justFreed, idleFreed := memorySupply(1<<30, memoryIdle)
		printScale(scaleRows, justFreed, idleFreed)
	}
}

// targets says which of the targets this run met.
func targets(starts []startup, rows []row) {
	met := map[bool]string{true: "met", false: "MISSED"}
	version := starts[2].mean / starts[0].mean
	fmt.Printf("\ntargets:\n")
	fmt.Printf("  nslab --version within 1.3x of a Go hello world: %.2fx, %s (the floor of its three libraries alone: %.2fx)\n",
		version, met[version <= 1.3], starts[1].mean/starts[0].mean)
	a := rows[0]
	fmt.Printf("  (a) nslab deploy as a whole process >= 15x faster than its script: %.1fx, %s; as a library call >= 10x: %.1fx, %s\n",
		ratio(a.scriptDeploy, a.cliDeploy), met[ratio(a.scriptDeploy, a.cliDeploy) >= 15], a.deployRatio(), met[a.deployRatio() >= 10])
	b := rows[1]
	fmt.Printf("  (b) deploy < 2s: %s, %s; destroy < 1s: %s, %s; deploy >= 10x script: %.1fx, %s\n",
		dur(b.deploy), met[b.deploy < 2*time.Second], dur(b.destroy), met[b.destroy < time.Second], b.deployRatio(), met[b.deployRatio() >= 10])
}

type row struct {
	name                              string
	deploy, destroy                   time.Duration // library call, median
	cliDeploy, cliDestroy             time.Duration // whole nslab process, median (0: not run)
	scriptDeploy, scriptDestroy       time.Duration // iproute2 script, median
	steps, scriptLines, runs, scripts int
}

func (r row) deployRatio() float64  { return ratio(r.scriptDeploy, r.deploy) }
func (r row) destroyRatio() float64 { return ratio(r.scriptDestroy, r.destroy) }

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// measure deploys and destroys the lab runs times with nslab and scripts
// times with the iproute2 script, each under a fresh random name.
func measure(title string, data []byte, runs, scripts int, nslabBin string) row {
	r := row{name: title, runs: runs, scripts: scripts}
	// Its namespaces live in this run's own mount namespace (see netns.go)
	// and go with it: deploy's check that they outlive the process would
	// refuse them.
	m := &lab.Manager{StateDir: mustTemp(), Ephemeral: true}
	defer func() { _ = os.RemoveAll(m.StateDir) }() // a temporary directory: best effort
	var dep, des, cdep, cdes, sdep, sdes []time.Duration
	for i := 0; i < runs; i++ {
		l := load(data)
		r.steps = len(lab.Plan(l))
		t0 := time.Now()
		if _, err := m.Deploy(context.Background(), l); err != nil {
			fail(err)
		}
		t1 := time.Now()
		if _, err := m.Destroy(l.Name); err != nil {
			fail(err)
		}
		dep, des = append(dep, t1.Sub(t0)), append(des, time.Since(t1))
		checkGone(l)
		if nslabBin != "" {
			l = load(data)
			file := filepath.Join(m.StateDir, l.Name+".yaml")
			must(os.WriteFile(file, l.Source, 0o644))
			cdep = append(cdep, timeCmd(nslabBin, "--state-dir", m.StateDir, "deploy", file))
			cdes = append(cdes, timeCmd(nslabBin, "--state-dir", m.StateDir, "destroy", "--name", l.Name))
			checkGone(l)
		}
	}
	for i := 0; i < scripts; i++ {
		l := load(data)
		dir := mustTemp()
		up, down := filepath.Join(dir, "deploy.sh"), filepath.Join(dir, "destroy.sh")
		must(os.WriteFile(up, []byte(lab.DeployScript(l, "")), 0o755))
		must(os.WriteFile(down, []byte(lab.DestroyScript(l, nil, "", dir)), 0o755))
		r.scriptLines = strings.Count(lab.DeployScript(l, ""), "\n")
		sdep = append(sdep, timeCmd("bash", up))
		sdes = append(sdes, timeCmd("bash", down))
		checkGone(l)
		must(os.RemoveAll(dir))
	}
	r.deploy, r.destroy = median(dep), median(des)
	r.cliDeploy, r.cliDestroy = median(cdep), median(cdes)
	r.scriptDeploy, r.scriptDestroy = median(sdep), median(sdes)
	return r
}

// load parses the lab under a fresh random name and namespace prefix.
func load(data []byte) *spec.Lab {
	name := labname.Random("b")
	l, err := spec.Parse(name+".yaml", labname.Rename(data, name))
	if err != nil {
		fail(err)
	}
	return l
}

func must(err error) {
	if err != nil {
		fail(err)
	}
}

// chainYAML is nslab generate chain --n n --routes: a chain of n nodes,
// a /30 per link, with the routes for full reachability.
func chainYAML(n int) []byte {
	src, err := generate.Lab(generate.Options{Kind: "chain", N: n, Routes: true})
	if err != nil {
		fail(err)
	}
	return []byte(src)
}

func timeCmd(name string, args ...string) time.Duration {
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	if out, err := cmd.Output(); err != nil {
		fail(fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out))
	}
	return time.Since(t0)
}

// checkGone stops the benchmark if any namespace of the lab remains, or if
// the host namespace's links changed (nslab and the script both create
// links straight inside the lab's namespaces).
func checkGone(l *spec.Lab) {
	for _, n := range l.Nodes {
		if ok, _ := ns.Exists(ns.DefaultDir, l.Namespace(n.Name)); ok {
			fail(fmt.Errorf("namespace %s left behind", l.Namespace(n.Name)))
		}
	}
	if got := hostLinks(); got != hostLinksAtStart {
		fail(fmt.Errorf("host links changed: %s, was %s", got, hostLinksAtStart))
	}
}

var hostLinksAtStart = hostLinks()

// hostLinks names the host namespace's links.
func hostLinks() string {
	links, err := nlsafe.LinkList(nlsafe.Caller)
	if err != nil {
		fail(err)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func print(rows []row) {
	fmt.Printf("%-26s %6s %12s %12s %12s %12s %8s %8s\n", "lab", "steps", "nslab up", "nslab down", "script up", "script down", "up x", "down x")
	for _, r := range rows {
		fmt.Printf("%-26s %6d %12s %12s %12s %12s %7.1fx %7.1fx\n", r.name, r.steps, dur(r.deploy), dur(r.destroy),
			dur(r.scriptDeploy), dur(r.scriptDestroy), r.deployRatio(), r.destroyRatio())
		if r.cliDeploy > 0 {
			fmt.Printf("%-26s %6s %12s %12s %12s %12s %7.1fx %7.1fx\n", "  as nslab commands", "", dur(r.cliDeploy), dur(r.cliDestroy),
				"", "", ratio(r.scriptDeploy, r.cliDeploy), ratio(r.scriptDestroy, r.cliDestroy))
		}
	}
	fmt.Printf("\nnslab: library calls, median of %d (a) and %d (b) runs; script: iproute2 commands (%d and %d lines), median of %d and %d runs.\n",
		rows[0].runs, rows[1].runs, rows[0].scriptLines, rows[1].scriptLines, rows[0].scripts, rows[1].scripts)
}

func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.3fs", d.Seconds())
}

func mustTemp() string {
	d, err := os.MkdirTemp("", "nslab-bench-")
	if err != nil {
		fail(err)
	}
	return d
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-topology:", err)
	os.Exit(1)
}
