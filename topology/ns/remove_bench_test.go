package ns

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labname"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// BenchmarkRemoveMany times removing n named namespaces, each two joined
// by a veth pair (so that the kernel has teardown work, as in a lab): one
// Remove each, 64 at once ("each"); the same with every namespace held
// open until all are unmounted, as a destroy does ("held"); or one detach
// of a tmpfs that holds all their mounts ("tree"). It reports the time per
// namespace until the removal returns (ms/namespace) and until the kernel
// has torn them all down (settled-ms/namespace, by Settle). Run:
// go test -run '^$' -bench RemoveMany -benchtime 1x ./topology/ns
func BenchmarkRemoveMany(b *testing.B) {
	skipUnlessRoot(b)
	for _, n := range []int{1000, 10000} {
		for _, mode := range []string{"each", "held", "tree"} {
			b.Run(fmt.Sprintf("%s/%d", mode, n), func(b *testing.B) {
				var settled time.Duration
				for range b.N {
					b.StopTimer()
					dir := makeMany(b, n, mode == "tree")
					b.StartTimer()
					t0 := time.Now()
					removeMany(b, dir, n, mode)
					b.StopTimer()
					if err := Settle(context.Background()); err != nil {
						b.Fatal(err)
					}
					settled += time.Since(t0)
					if mode != "tree" {
						_ = ReleaseDir(dir) // the bind mount of itself the first namespace made
					}
					os.RemoveAll(dir)
				}
				perNS := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N*n) }
				b.ReportMetric(perNS(b.Elapsed()), "ms/namespace")
				b.ReportMetric(perNS(settled), "settled-ms/namespace")
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

func removeMany(b *testing.B, dir string, n int, mode string) {
	if mode == "tree" {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			b.Fatal(err)
		}
		return
	}
	held := make([]*NS, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			name := fmt.Sprintf("x%d", i)
			if mode == "held" {
				held[i], _ = Open(dir, name)
			}
			if err := Remove(dir, name); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, x := range held {
		x.Close()
	}
}
