package spec

import (
	"fmt"
	"testing"

	"github.com/nslab/nslab/topology/generate"
)

// TestParseIsLinear: parsing a generated chain allocates as much per node
// at 3,000 nodes as at 1,000 (within 25%): nothing in parsing or
// validation does per-node work that grows with the lab. (Allocations are
// counted, not timed: a lookup by scanning shows in the benchmark's times,
// make bench-topology.)
func TestParseIsLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("one goroutine, fixed input: slow under -race (make test-unit runs -short -race), which has nothing here to see; the runs without -short run it")
	}
	perNode := func(n int) float64 {
		src, err := generate.Lab(generate.Options{Kind: "chain", N: n, Routes: true})
		if err != nil {
			t.Fatal(err)
		}
		data := []byte(src)
		allocs := testing.AllocsPerRun(1, func() {
			if _, err := Parse("chain.yaml", data); err != nil {
				t.Fatal(err)
			}
		})
		return allocs / float64(n)
	}
	small, big := perNode(1000), perNode(3000)
	if big > 1.25*small {
		t.Errorf("parsing allocates %.0f times per node at 3,000 nodes, %.0f at 1,000", big, small)
	}
	t.Logf("allocations per node: %.0f at 1,000 nodes, %.0f at 3,000", small, big)
}

// BenchmarkParseChain parses generated chains of 1,000 and 10,000 nodes.
func BenchmarkParseChain(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		src, err := generate.Lab(generate.Options{Kind: "chain", N: n, Routes: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%d-nodes", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := Parse("chain.yaml", []byte(src)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
