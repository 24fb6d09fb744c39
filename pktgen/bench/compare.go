package bench

// Comparing results files (bench --out): is B faster than A? Per traffic
// run, frame size and figure, the medians, the change, a confidence
// interval of the change, and the Mann-Whitney U test's p-value, as Go's
// benchstat gives them.
