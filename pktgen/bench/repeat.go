package bench

// Repeated measurements: every figure of a frame size over the rounds
// of a --repeat, as its median with min..max and a confidence interval
// of the median (pktgen/stats).
