//go:build !vmtest

package bench

// placedHeldRate is a rate the placed router holds without loss: on the
// host, an eighth or less of what it forwards (about 300 kpps).
const placedHeldRate = 40000
