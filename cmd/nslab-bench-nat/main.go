// Command nslab-bench-nat measures what NAT and a firewall cost a router
// on this machine (make bench-nat): the same frame-size sweep through the
// NAT example (examples/nat-router.yaml: masquerade, dnat, a stateful
// firewall) and through a copy of it without the NAT and firewall rules,
// alternating rounds, each frame size's median with its spread, and the
// difference as time per packet. Without CPU placement a veth path runs
// every hop on the sender's CPU, so the cost shows as a lower top rate.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/labname"
	"github.com/nslab/nslab/topology/spec"
)

func main() {
	file := flag.String("lab", "examples/nat-router.yaml", "the NAT lab (its first traffic run is measured)")
	rounds := flag.Int("rounds", 3, "runs per frame size and lab (the median is reported)")
	dur := flag.Duration("duration", 2*time.Second, "length of each run")
	flag.Parse()
	if err := lab.CheckPrivileges(); err != nil {
		fail(err)
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		fail(err)
	}
	nat, plain := parse(string(data)), parse(withoutRules(string(data)))
	m := &lab.Manager{StateDir: tempDir()}
	defer func() { _ = os.RemoveAll(m.StateDir) }() // a temporary directory: best effort
	destroy := func() {
		for _, l := range []*spec.Lab{nat, plain} {
			if _, err := m.Destroy(l.Name); err != nil {
				fmt.Fprintln(os.Stderr, "bench-nat: destroy:", err)
			}
		}
	}
	defer destroy()
	frames := []int{64, 512, 1518}
	got := map[string]map[int][]float64{"plain": {}, "nat": {}}
	var ct []string
	for r := 0; r < *rounds; r++ {
		for _, f := range frames {
			for _, c := range []struct {
				name string
				l    *spec.Lab
			}{{"plain", plain}, {"nat", nat}} {
				rep, err := run(m, c.l, f, *dur)
				if err != nil {
					destroy()
					fail(err)
				}
				got[c.name][f] = append(got[c.name][f], rep.PPS)
				fmt.Printf("round %d, %4d-byte frames, %-5s: %8.0f pps received, loss %d; %s\n", r+1, f, c.name, rep.PPS, rep.Loss, rep.Bottleneck)
				for _, x := range rep.Conntrack {
					if r == 0 && c.name == "nat" {
						ct = append(ct, fmt.Sprintf("  %4d-byte frames: %s", f, x))
					}
				}
			}
		}
	}
	fmt.Printf("\nmedian of %d runs of %s (spread min..max), received pps; NAT lab: masquerade, dnat and a stateful firewall on the router\n", *rounds, *dur)
	fmt.Printf("%6s  %26s  %26s  %9s  %s\n", "FRAME", "PLAIN FORWARDING", "NAT + FIREWALL", "NAT/PLAIN", "NAT COST PER PACKET")
	for _, f := range frames {
		p, n := median(got["plain"][f]), median(got["nat"][f])
		fmt.Printf("%6d  %26s  %26s  %9.3f  %+.0f ns\n", f, spread(got["plain"][f]), spread(got["nat"][f]), n/p, (1/n-1/p)*1e9)
	}
	fmt.Println("\nconnection tracking in the NAT lab's router (first round):")
	fmt.Println(strings.Join(ct, "\n"))
}

// withoutRules is the lab file with its nodes' nat: and firewall: blocks
// taken out (and another name), for the plain run.
func withoutRules(src string) string {
	var out []string
	skip := false
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		switch {
		case indent == 4 && (strings.HasPrefix(trimmed, "nat:") || strings.HasPrefix(trimmed, "firewall:")):
			skip = true
			continue
		case skip && (indent > 4 || trimmed == ""):
			continue
		}
		skip = false
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// parse reads a lab under a fresh name.
func parse(src string) *spec.Lab {
	name := labname.Random("n")
	l, err := spec.Parse(name+".yaml", labname.Rename([]byte(src), name))
	if err != nil {
		fail(err)
	}
	return l
}

// run measures the lab's first traffic run at one frame size, deploying
// the lab the first time and keeping it.
func run(m *lab.Manager, l *spec.Lab, frame int, d time.Duration) (*bench.Report, error) {
	t, err := bench.Traffic(l, bench.Selection{Frames: []int{frame}, Duration: d, Rate: "max"})
	if err != nil {
		return nil, err
	}
	out, err := bench.Sweep(context.Background(), m, bench.Request{Lab: l, Traffic: t, Placement: "auto", Keep: true})
	if err != nil {
		return nil, err
	}
	return out.Reports[0], nil
}

func spread(v []float64) string {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return fmt.Sprintf("%.0f (%.0f..%.0f)", median(v), s[0], s[len(s)-1])
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func tempDir() string {
	d, err := os.MkdirTemp("", "nslab-bench-nat-")
	if err != nil {
		fail(err)
	}
	return d
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-nat:", err)
	os.Exit(1)
}
