package generate

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/nslab/nslab/topology/check"
	"github.com/nslab/nslab/topology/spec"
)

// TestShapesReachEverything: every shape, at sizes with their edge cases,
// is a valid lab file, and with routes every node reaches every address
// of the lab and gets the reply back, by the file (the same model nslab
// check compares the kernel with).
func TestShapesReachEverything(t *testing.T) {
	for _, kind := range Kinds {
		for _, n := range []int{1, 2, 3, 4, 7, 12} {
			for _, routes := range []bool{false, true} {
				src, err := Lab(Options{Kind: kind, N: n, Routes: routes})
				if err != nil {
					t.Fatalf("%s %d: %v", kind, n, err)
				}
				l, err := spec.Parse(kind+".yaml", []byte(src))
				if err != nil {
					t.Fatalf("%s %d routes %v: %v\n%s", kind, n, routes, err, src)
				}
				if !routes {
					continue
				}
				for _, p := range check.Expected(l) {
					if !p.Expect {
						t.Errorf("%s %d: %s -> %s unreachable by the file: %s", kind, n, p.From, p.To, p.Why)
					}
				}
			}
		}
	}
}

// TestSizes: the node and link counts of each shape.
func TestSizes(t *testing.T) {
	for _, c := range []struct {
		o            Options
		nodes, links int
	}{
		{Options{Kind: "chain", N: 10}, 10, 9},
		{Options{Kind: "star", N: 10}, 11, 10},
		{Options{Kind: "tree", N: 10}, 10, 9},
		{Options{Kind: "mesh", N: 10}, 10, 45},
		{Options{Kind: "clos", N: 10, Spines: 3}, 13, 30},
	} {
		src, err := Lab(c.o)
		if err != nil {
			t.Fatal(err)
		}
		l, err := spec.Parse("x.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Nodes) != c.nodes || len(l.Links) != c.links {
			t.Errorf("%s: %d nodes, %d links; want %d, %d", c.o.Kind, len(l.Nodes), len(l.Links), c.nodes, c.links)
		}
	}
	if _, err := Lab(Options{Kind: "mesh", N: MaxMesh + 1}); err == nil {
		t.Error("an oversize mesh is accepted")
	}
	if _, err := Lab(Options{Kind: "ring", N: 3}); err == nil || !strings.Contains(err.Error(), "chain, star") {
		t.Errorf("unknown shape: %v", err)
	}
}

// TestLinkRange: the prefixes cover exactly the links asked for.
func TestLinkRange(t *testing.T) {
	for _, c := range [][2]int{{0, 1}, {0, 5}, {3, 17}, {1, 1000}, {0, 1 << 20}} {
		covered := 0
		next := linkAddr(c[0], 0)
		for _, p := range linkRange(c[0], c[1]) {
			if p.Addr() != next {
				t.Fatalf("%v: gap before %v", c, p)
			}
			size := 1 << (32 - p.Bits())
			covered += size / 4
			next = addrPlus(p.Addr(), size)
		}
		if covered != c[1]-c[0] {
			t.Errorf("%v: covers %d links", c, covered)
		}
	}
}

func addrPlus(a netip.Addr, n int) netip.Addr {
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func ExampleLab() {
	src, _ := Lab(Options{Kind: "chain", N: 3, Routes: true, Origin: "a chain of three, routed"})
	fmt.Print(src)
	// Output:
	// # a chain of three, routed
	// name: chain
	// nodes:
	//   n0:
	//     interfaces:
	//       r: {addresses: [10.0.0.1/30]}
	//     routes:
	//       - {to: default, via: 10.0.0.2}
	//   n1:
	//     forwarding: {ipv4: true}
	//     interfaces:
	//       l: {addresses: [10.0.0.2/30]}
	//       r: {addresses: [10.0.0.5/30]}
	//     routes:
	//       - {to: default, via: 10.0.0.6}
	//   n2:
	//     interfaces:
	//       l: {addresses: [10.0.0.6/30]}
	//     routes:
	//       - {to: default, via: 10.0.0.5}
	// links:
	//   - endpoints: [n0:r, n1:l]
	//   - endpoints: [n1:r, n2:l]
}

// TestOSPFShapes: with --routing ospf every shape parses, every node
// forwards and runs ospfd with a frr.conf rendered from its own links and
// router ID, no node has a static route, and check expects every pair to
// answer once the daemons have learned the routes.
func TestOSPFShapes(t *testing.T) {
	for _, kind := range Kinds {
		src, err := Lab(Options{Kind: kind, N: 4, Routing: "ospf"})
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		l, err := spec.Parse(kind+".yaml", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v\n%s", kind, err, src)
		}
		for _, n := range l.Nodes {
			if n.FRR == nil || len(n.Routes) > 0 || !n.Forwarding.IPv4 {
				t.Errorf("%s: node %s: frr %v, %d routes, forwarding %v", kind, n.Name, n.FRR != nil, len(n.Routes), n.Forwarding.IPv4)
				continue
			}
			for _, i := range n.Interfaces {
				if want := "network " + i.Addresses[0].Masked().String() + " area 0"; !strings.Contains(n.FRR.Config, want) {
					t.Errorf("%s: %s's frr.conf lacks %q:\n%s", kind, n.Name, want, n.FRR.Config)
				}
			}
		}
		for _, p := range check.Expected(l) {
			if !p.Expect {
				t.Errorf("%s: %s -> %s not expected to answer: %s", kind, p.From, p.To, p.Why)
			}
		}
	}
}
