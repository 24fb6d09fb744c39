//go:build !vmtest

package bench

// watchStalls: every bench watches its CPUs for stalls (see stalls.go);
// the VM harness's tests do not (stalls_vm.go).
const watchStalls = true
