//go:build vmtest

package bench

// placedHeldRate is a rate the placed router holds without loss in the
// VM: its emulated CPUs forward about 30 kpps placed (seen in
// TestPrivilegedRouterLimited there), and some days less.
const placedHeldRate = 10000
