package lab

import (
	"fmt"
	"testing"

	"github.com/nslab/nslab/topology/generate"
	"github.com/nslab/nslab/topology/spec"
)

// BenchmarkPlanChain plans generated chains of 1,000 and 10,000 nodes:
// the time and memory a deploy spends before its first kernel change.
func BenchmarkPlanChain(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		src, err := generate.Lab(generate.Options{Kind: "chain", N: n, Routes: true})
		if err != nil {
			b.Fatal(err)
		}
		l, err := spec.Parse("chain.yaml", []byte(src))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%d-nodes", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if len(Plan(l)) == 0 {
					b.Fatal("no steps")
				}
			}
		})
	}
}
