package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// memFreeKB returns the kernel's MemFree (KB, /proc/meminfo). What a
// deployed lab lowers it by is the kernel memory its namespaces hold (the
// nslab process has ended by then).
func memFreeKB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		fail(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "MemFree:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				fail(fmt.Errorf("/proc/meminfo: %q: %w", s.Text(), err))
			}
			return kb
		}
	}
	fail(fmt.Errorf("/proc/meminfo has no MemFree"))
	return 0
}

// memoryIdle is how long memorySupply leaves freed memory alone: long
// enough for a host that takes free memory back to have done so.
const memoryIdle = 10 * time.Second

// memorySupply measures what the first write to a page costs on this
// machine, per MiB: for memory this process freed a moment before (the
// kernel's own free pages), and for memory freed idle earlier. On a
// virtual machine whose host takes free memory back (free page
// reporting, ballooning) the second is dearer: the host supplies the
// page again on first touch. On bare metal they are the same.
func memorySupply(size int, idle time.Duration) (justFreed, idleFreed time.Duration) {
	touch(size) // whatever state the memory is in: now it was just freed
	justFreed = touch(size)
	time.Sleep(idle)
	idleFreed = touch(size)
	mib := time.Duration(size >> 20)
	return justFreed / mib, idleFreed / mib
}

// touch maps size bytes, writes one byte per page, unmaps them, and
// returns how long the writes took.
func touch(size int) time.Duration {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		fail(fmt.Errorf("map %d bytes: %w", size, err))
	}
	page := os.Getpagesize()
	t0 := time.Now()
	for i := 0; i < size; i += page {
		b[i] = 1
	}
	d := time.Since(t0)
	if err := syscall.Munmap(b); err != nil {
		fail(err)
	}
	return d
}
