// Command nslab-bench-peers measures nslab against Mininet, the tool a
// user would otherwise build such labs with (make bench-peers): both build
// the same lab, nslab generate chain --routes or tree --routes (the same
// nodes, links, addresses, forwarding and routes), one after the other
// on this machine, at each size, over rounds whose order alternates, and
// it prints each tool's time up and down and their ratios with their
// spread over the rounds.
//
// nslab is timed as whole processes (nslab deploy FILE, nslab destroy), its
// start-up included. Mininet (Debian's, through its Python API: what its
// tree and linear topologies do, with the lab's own addresses and routes)
// is timed inside the Python program, from Mininet() to the last route
// and around net.stop(), its interpreter's start-up left out: both
// favour Mininet. Each Mininet host gets its addresses, forwarding and
// routes in one shell command, Mininet's fastest way.
package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nslab/nslab/internal/labname"
	"github.com/nslab/nslab/topology/generate"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// mininetBuilder builds the lab it reads as JSON on stdin with Mininet's
// Python API, stops it, and prints the two times as JSON.
//
//go:embed mininet_builder.py
var mininetBuilder string

func main() {
	nslabBin := flag.String("nslab", "bin/nslab", "the nslab binary")
	python := flag.String("python", "/usr/bin/python3", "the Python that imports Debian's mininet")
	sizes := flag.String("sizes", "100,250,1000", "lab sizes (nodes), comma-separated")
	kinds := flag.String("kinds", "chain,tree", "generated shapes: chain, tree")
	rounds := flag.Int("rounds", 3, "rounds at each size (at least 3: the spread is their range)")
	flag.Parse()
	if *rounds < 3 {
		fail(fmt.Errorf("-rounds %d: at least 3", *rounds))
	}
	if err := exec.Command(*python, "-c", "import mininet.net").Run(); err != nil {
		fail(fmt.Errorf("%s cannot import mininet (make deps installs Debian's mininet): %w", *python, err))
	}
	dir, err := os.MkdirTemp("", "nslab-bench-peers")
	if err != nil {
		fail(err)
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: best effort
	builder := filepath.Join(dir, "mininet_builder.py")
	must(os.WriteFile(builder, []byte(mininetBuilder), 0o644))
	fmt.Printf("nslab against Mininet, the same lab built alternately, %d rounds each (median, and min..max)\n", *rounds)
	fmt.Printf("%-6s %6s  %-26s %-26s %-22s %-26s %-26s %-22s\n", "SHAPE", "NODES", "NSLAB UP", "MININET UP", "UP RATIO", "NSLAB DOWN", "MININET DOWN", "DOWN RATIO")
	for _, kind := range strings.Split(*kinds, ",") {
		for _, s := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 2 {
				fail(fmt.Errorf("-sizes: %q is not a size of 2 nodes or more", s))
			}
			var r result
			for round := range *rounds {
				lab := generated(kind, n)
				order := []func(){
					func() {
						up, down := timeNslab(*nslabBin, dir, lab)
						r.nslabUp, r.nslabDown = append(r.nslabUp, up), append(r.nslabDown, down)
					},
					func() {
						up, down := timeMininet(*python, builder, lab)
						r.mnUp, r.mnDown = append(r.mnUp, up), append(r.mnDown, down)
					},
				}
				if round%2 == 1 {
					order[0], order[1] = order[1], order[0]
				}
				for _, f := range order {
					f()
				}
			}
			r.print(kind, n)
		}
	}
}

// result is one shape and size's times over the rounds, in seconds.
type result struct{ nslabUp, nslabDown, mnUp, mnDown []float64 }

func (r result) print(kind string, n int) {
	fmt.Printf("%-6s %6d  %-26s %-26s %-22s %-26s %-26s %-22s\n", kind, n,
		spread(r.nslabUp, "s"), spread(r.mnUp, "s"), spread(ratios(r.mnUp, r.nslabUp), "x"),
		spread(r.nslabDown, "s"), spread(r.mnDown, "s"), spread(ratios(r.mnDown, r.nslabDown), "x"))
}

// ratios is each round's Mininet time over nslab's.
func ratios(mn, nslab []float64) []float64 {
	out := make([]float64, len(mn))
	for i := range mn {
		out[i] = mn[i] / nslab[i]
	}
	return out
}

// spread is "median (min..max)".
func spread(v []float64, unit string) string {
	s := slices.Sorted(slices.Values(v))
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	f := map[string]string{"s": "%.3g", "x": "%.1f"}[unit]
	return fmt.Sprintf(f+"%s ("+f+".."+f+")", med, unit, s[0], s[len(s)-1])
}

// generated is nslab generate KIND --n N --routes under a random name.
func generated(kind string, n int) *spec.Lab {
	src, err := generate.Lab(generate.Options{Kind: kind, N: n, Routes: true})
	if err != nil {
		fail(err)
	}
	name := labname.Random("p")
	l, err := spec.Parse(name+".yaml", labname.Rename([]byte(src), name))
	if err != nil {
		fail(err)
	}
	return l
}

// timeNslab deploys and destroys the lab as two nslab processes, and
// checks that nothing of it is left.
func timeNslab(bin, dir string, l *spec.Lab) (up, down float64) {
	file := filepath.Join(dir, l.Name+".yaml")
	must(os.WriteFile(file, l.Source, 0o644))
	state := filepath.Join(dir, "state")
	up = timeCmd(bin, "--state-dir", state, "deploy", "-q", file)
	down = timeCmd(bin, "--state-dir", state, "destroy", "--name", l.Name)
	for _, n := range l.Nodes {
		if ok, _ := ns.Exists(ns.DefaultDir, l.Namespace(n.Name)); ok {
			fail(fmt.Errorf("nslab destroy left namespace %s", l.Namespace(n.Name)))
		}
	}
	return up, down
}

func timeCmd(name string, args ...string) float64 {
	cmd := exec.Command(name, args...)
	t0 := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		fail(fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out))
	}
	return time.Since(t0).Seconds()
}

// mininetLab is the lab as the builder reads it.
type mininetLab struct {
	Nodes []mininetNode `json:"nodes"`
	Links [][4]string   `json:"links"` // node, interface, node, interface
}

type mininetNode struct {
	Name       string             `json:"name"`
	Forwarding bool               `json:"forwarding"`
	Interfaces []mininetInterface `json:"interfaces"`
	Routes     [][2]string        `json:"routes"` // to, via
}

type mininetInterface struct {
	Name      string   `json:"name"`
	Addresses []string `json:"addresses"`
}

// timeMininet builds the lab with Mininet and stops it; the builder
// reports its times.
func timeMininet(python, builder string, l *spec.Lab) (up, down float64) {
	var m mininetLab
	for _, n := range l.Nodes {
		mn := mininetNode{Name: n.Name, Forwarding: n.Forwarding.IPv4}
		for _, i := range n.Interfaces {
			x := mininetInterface{Name: i.Name}
			for _, a := range i.Addresses {
				x.Addresses = append(x.Addresses, a.String())
			}
			mn.Interfaces = append(mn.Interfaces, x)
		}
		for _, r := range n.Routes {
			mn.Routes = append(mn.Routes, [2]string{r.To.String(), r.Via.String()})
		}
		m.Nodes = append(m.Nodes, mn)
	}
	for _, k := range l.Links {
		m.Links = append(m.Links, [4]string{k.A.Node, k.A.Interface, k.B.Node, k.B.Interface})
	}
	in, err := json.Marshal(m)
	if err != nil {
		fail(err)
	}
	cmd := exec.Command(python, builder)
	cmd.Stdin = bytes.NewReader(in)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		fail(fmt.Errorf("mininet: %w\n%s", err, errb.String()))
	}
	var t struct {
		Up   float64 `json:"up_s"`
		Down float64 `json:"down_s"`
	}
	if err := json.Unmarshal(out, &t); err != nil {
		fail(fmt.Errorf("mininet's times: %w: %s", err, out))
	}
	return t.Up, t.Down
}

func must(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "nslab-bench-peers:", err)
	os.Exit(1)
}
