package ns

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/nslab/nslab/topology/labname"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// BenchmarkRemoveMany times removing n named namespaces, each two joined
// by a veth pair (so that the kernel has teardown work, as in a lab): one
// Remove each, 64 at once as a destroy does ("each"), or one detach of a
// tmpfs that holds all their mounts ("tree"). It reports the time per
// namespace. Run: go test -run '^$' -bench RemoveMany -benchtime 1x ./topology/ns
func BenchmarkRemoveMany(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	for _, n := range []int{1000, 10000} {
		for _, mode := range []string{"each", "tree"} {
			b.Run(fmt.Sprintf("%s/%d", mode, n), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					dir := makeMany(b, n, mode == "tree")
					b.StartTimer()
					removeMany(b, dir, n, mode == "tree")
					b.StopTimer()
					os.RemoveAll(dir)
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N*n), "ms/namespace")
			})
		}
	}
}

// makeMany creates n namespaces under a new directory (a tmpfs of its own
// when tree), a veth pair between each two.
func makeMany(b *testing.B, n int, tree bool) string {
	dir := "/run/" + labname.Random("nsbench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if tree {
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=755"); err != nil {
			b.Fatal(err)
		}
	}
	c, err := NewCreator(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var prev *NS
	for i := range n {
		x, err := c.Create(fmt.Sprintf("x%d", i), nil)
		if err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			prev = x
			continue
		}
		h, err := prev.NetlinkHandle()
		if err != nil {
			b.Fatal(err)
		}
		err = h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "a"}, PeerName: "b", PeerNamespace: netlink.NsFd(x.Fd())})
		h.Close()
		prev.Close()
		x.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

func removeMany(b *testing.B, dir string, n int, tree bool) {
	if tree {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			b.Fatal(err)
		}
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := Remove(dir, fmt.Sprintf("x%d", i)); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
}
