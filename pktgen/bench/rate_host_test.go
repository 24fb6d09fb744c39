//go:build !vmtest

package bench

import "testing"

// placedHeldRate is a rate the placed router holds without loss: on the
// host, an eighth or less of what it forwards (about 300 kpps).
const placedHeldRate = 40000

// overloadable does nothing on the host: its placed router forwards far
// less than a pinned sender sends, and the host's settings are not the
// test's to change.
func overloadable(*testing.T) {}
