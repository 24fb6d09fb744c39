//go:build vmtest

package labtest

// InVM is true in the tests the VM harness runs (make vmtest builds them
// with the vmtest tag).
const InVM = true
