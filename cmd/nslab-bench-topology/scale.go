package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nslab/nslab/internal/labname"
	"github.com/nslab/nslab/topology/ns"
	"github.com/nslab/nslab/topology/spec"
)

// scaleRow is one chain size: its whole nslab deploy and destroy
// processes, timed, with their peak resident memory, the kernel memory
// the deployed lab held (heldKB), and when the kernel had torn the lab
// down after destroy began (settled).
type scaleRow struct {
	nodes                    int
	fileBytes                int
	deploy, destroy, settled time.Duration
	deployKB, destroyKB      int64
	heldKB                   int64
}

func (r scaleRow) perNode(d time.Duration) time.Duration { return d / time.Duration(r.nodes) }

// measureScale deploys and destroys a generated chain of each size, as
// nslab processes, the smallest first, rounds times over: one row per
// size and round, by size. After each destroy it waits for the kernel to
// finish tearing the namespaces down (it does that after destroy
// returns), and times that too: the next size starts on an idle machine.
func measureScale(nslabBin, sizes string, rounds int) [][]scaleRow {
	settle(time.Now()) // whatever ran before
	var counts []int
	for _, f := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			fail(fmt.Errorf("-scale %q: chain sizes, at least 2", sizes))
		}
		counts = append(counts, n)
	}
	out := make([][]scaleRow, len(counts))
	for range rounds {
		for i, n := range counts {
			out[i] = append(out[i], scaleOne(nslabBin, n))
		}
	}
	return out
}

func scaleOne(nslabBin string, n int) scaleRow {
	dir := mustTemp()
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: best effort
	name := labname.Random("s")
	data := labname.Rename(chainYAML(n), name)
	file := filepath.Join(dir, name+".yaml")
	must(os.WriteFile(file, data, 0o644))
	r := scaleRow{nodes: n, fileBytes: len(data)}
	free := memFreeKB()
	r.deploy, r.deployKB = timeMem(nslabBin, "--state-dir", dir, "deploy", file)
	r.heldKB = free - memFreeKB()
	t0 := time.Now()
	r.destroy, r.destroyKB = timeMem(nslabBin, "--state-dir", dir, "destroy", "--name", name)
	r.settled = settle(t0)
	l, err := spec.Parse(file, data)
	if err != nil {
		fail(err)
	}
	checkGone(l)
	return r
}

// settle waits until the kernel has torn down every namespace released
// so far and returns the time since t0.
func settle(t0 time.Time) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	must(ns.Settle(ctx))
	return time.Since(t0)
}

// timeMem runs a command and returns how long it took and its peak
// resident memory (KB, from the kernel's rusage of the child).
func timeMem(name string, args ...string) (time.Duration, int64) {
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	if out, err := cmd.Output(); err != nil {
		fail(fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out))
	}
	el := time.Since(t0)
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru == nil {
		return el, 0
	}
	return el, ru.Maxrss
}

// printScale prints each size's rounds (the round of median deploy time,
// with the spread of the per-node deploy time over the rounds), the
// per-node ratios against 1,000 nodes (each round's ratio, median and
// range), and what fresh memory costs this machine (memorySupply's
// justFreed and idleFreed, per MiB) against what the largest lab held: an
// estimate, from this process's own first writes, of the part of a
// deploy's growth that is the host handing memory back rather than nslab.
func printScale(sizes [][]scaleRow, justFreed, idleFreed time.Duration) {
	fmt.Printf("\nchains of nslab generate chain --routes, one whole nslab process each way, %d round(s) (the round of median deploy time):\n", len(sizes[0]))
	fmt.Printf("(kernel done: from the start of destroy until the kernel had torn every namespace down, which it does after destroy returns;\n kernel held: how much MemFree fell while the lab was deployed, per node)\n")
	fmt.Printf("%8s %10s %10s %22s %10s %10s %12s %10s %12s %12s %12s\n", "nodes", "file", "deploy", "per node (min..max)", "destroy", "per node", "kernel done", "per node", "deploy peak", "destroy peak", "kernel held")
	var rows []scaleRow
	for _, rounds := range sizes {
		r := medianRow(rounds)
		rows = append(rows, r)
		lo, hi := perNodeRange(rounds)
		fmt.Printf("%8d %9.1fM %10s %22s %10s %10s %12s %10s %11.0fM %11.0fM %10.0fKB\n", r.nodes, float64(r.fileBytes)/(1<<20), dur(r.deploy),
			dur(r.perNode(r.deploy))+" ("+dur(lo)+".."+dur(hi)+")", dur(r.destroy), dur(r.perNode(r.destroy)), dur(r.settled), dur(r.perNode(r.settled)),
			float64(r.deployKB)/1024, float64(r.destroyKB)/1024, float64(r.heldKB)/float64(r.nodes))
	}
	if len(rows) < 2 {
		return
	}
	met := map[bool]string{true: "met", false: "MISSED"}
	perNodeTargets(sizes, met)
	first, last := rows[0], rows[len(rows)-1]
	down := float64(last.perNode(last.destroy)) / float64(first.perNode(first.destroy))
	done := float64(last.perNode(last.settled)) / float64(first.perNode(first.settled))
	fmt.Printf("per-node destroy at %d nodes over %d: %.2fx, %s (target <= 1.25x); kernel done %.2fx\n", last.nodes, first.nodes, down, met[down <= 1.25], done)
	scaleTargets(rows, met)
	mibPerNode := float64(last.heldKB) / 1024 / float64(last.nodes)
	fresh := time.Duration(float64(idleFreed-justFreed) * mibPerNode)
	fmt.Printf("fresh memory: a first write costs %s per MiB of memory just freed, %s per MiB of memory freed %s earlier (%.2fx);\n",
		dur(justFreed), dur(idleFreed), memoryIdle, float64(idleFreed)/float64(justFreed))
	fmt.Printf("  at %.2f MiB held per node, that is about %s per node of the %d-node deploy if the kernel's first writes cost what this process's do; its per-node cost grew by %s\n",
		mibPerNode, dur(max(fresh, 0)), last.nodes, dur(last.perNode(last.deploy)-first.perNode(first.deploy)))
}

// medianRow is the round of median deploy time.
func medianRow(rounds []scaleRow) scaleRow {
	s := slices.Clone(rounds)
	slices.SortFunc(s, func(a, b scaleRow) int { return cmp.Compare(a.deploy, b.deploy) })
	return s[len(s)/2]
}

// perNodeRange is the least and most per-node deploy time of the rounds.
func perNodeRange(rounds []scaleRow) (lo, hi time.Duration) {
	lo, hi = rounds[0].perNode(rounds[0].deploy), rounds[0].perNode(rounds[0].deploy)
	for _, r := range rounds[1:] {
		lo, hi = min(lo, r.perNode(r.deploy)), max(hi, r.perNode(r.deploy))
	}
	return lo, hi
}

// perNodeTargets compares each size's per-node deploy time with that at
// 1,000 nodes, round by round (each round's sizes ran one after the
// other): the median ratio and its range. Targets: at most 1.2x at
// 10,000, at most 1x at 250 (the time per node flat from 250 to 10,000;
// at 100 nodes the process's start-up is a larger share).
func perNodeTargets(sizes [][]scaleRow, met map[bool]string) {
	base := slices.IndexFunc(sizes, func(rs []scaleRow) bool { return rs[0].nodes == 1000 })
	if base < 0 {
		return
	}
	for _, rs := range sizes {
		if rs[0].nodes == 1000 {
			continue
		}
		var ratios []float64
		for i, r := range rs {
			b := sizes[base][i]
			ratios = append(ratios, float64(r.perNode(r.deploy))/float64(b.perNode(b.deploy)))
		}
		slices.Sort(ratios)
		line := fmt.Sprintf("per-node deploy at %d nodes over 1000: %.2fx (rounds %.2f..%.2f)", rs[0].nodes, ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1])
		switch rs[0].nodes {
		case 10000:
			line += fmt.Sprintf(", %s (target <= 1.2x)", met[ratios[len(ratios)/2] <= 1.2])
		case 250:
			line += fmt.Sprintf(", %s (target <= 1x)", met[ratios[len(ratios)/2] <= 1])
		}
		fmt.Println(line)
	}
}

// scaleTargets says which of the whole-process targets of issue 35 this
// run met: a 1,000-node chain up in 1.5 s and down in 0.3 s, 10,000 up in
// 15 s.
func scaleTargets(rows []scaleRow, met map[bool]string) {
	for _, r := range rows {
		switch r.nodes {
		case 1000:
			fmt.Printf("  1000 nodes up <= 1.5s: %s, %s; down <= 0.3s: %s, %s\n", dur(r.deploy), met[r.deploy <= 1500*time.Millisecond], dur(r.destroy), met[r.destroy <= 300*time.Millisecond])
		case 10000:
			fmt.Printf("  10000 nodes up <= 15s: %s, %s\n", dur(r.deploy), met[r.deploy <= 15*time.Second])
		}
	}
}
