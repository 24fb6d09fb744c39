//go:build vmtest

package bench

// watchStalls is false in the tests that run in the VM harness (make
// vmtest): its CPUs are emulated, so every "stall" would be the
// emulator's, and a BPF program on every timer expiry slows the
// emulated kernel past the suite's time limit.
const watchStalls = false
