package spec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// CPUSet is a set of CPU numbers, sorted, without duplicates.
type CPUSet []int

// MaxCPU bounds CPU numbers in a lab file (the kernel's NR_CPUS limit).
const MaxCPU = 8191

// ParseCPUList reads the kernel's list format: "1", "0-3", "0,2-3".
func ParseCPUList(s string) (CPUSet, error) {
	var out CPUSet
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b > MaxCPU {
			return nil, fmt.Errorf("CPU list %q: write CPU numbers and ranges such as 1, 0-3 or 0,2-3 (smallest first, at most %d)", s, MaxCPU)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out.normal(), nil
}

// Normal returns the set sorted and without duplicates.
func (c CPUSet) Normal() CPUSet { return c.normal() }

func (c CPUSet) normal() CPUSet {
	slices.Sort(c)
	return slices.Compact(c)
}

// Contains reports whether cpu is in the set.
func (c CPUSet) Contains(cpu int) bool {
	_, found := slices.BinarySearch(c, cpu)
	return found
}

// String renders the set in the kernel's list format ("0-3,5").
func (c CPUSet) String() string {
	var parts []string
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(c[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", c[i], c[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Mask renders the set as the kernel's CPU mask format, which rps_cpus and
// xps_cpus take: hex, in comma-separated 32-bit groups, most significant
// first ("2" for CPU 1; "1,00000000" for CPU 32).
func (c CPUSet) Mask() string {
	if len(c) == 0 {
		return "0"
	}
	words := make([]uint32, c[len(c)-1]/32+1)
	for _, cpu := range c {
		words[cpu/32] |= 1 << (cpu % 32)
	}
	parts := []string{strconv.FormatUint(uint64(words[len(words)-1]), 16)}
	for i := len(words) - 2; i >= 0; i-- {
		parts = append(parts, fmt.Sprintf("%08x", words[i]))
	}
	return strings.Join(parts, ",")
}

// ParseCPUMask reads the kernel's mask format (the inverse of Mask).
func ParseCPUMask(s string) (CPUSet, error) {
	groups := strings.Split(strings.TrimSpace(s), ",")
	var out CPUSet
	for i, g := range groups {
		w, err := strconv.ParseUint(g, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("CPU mask %q: %w", s, err)
		}
		base := 32 * (len(groups) - 1 - i)
		for b := 0; b < 32; b++ {
			if w&(1<<b) != 0 {
				out = append(out, base+b)
			}
		}
	}
	return out.normal(), nil
}
