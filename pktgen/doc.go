// Package pktgen is nslab's traffic side: everything that sends packets
// through a lab and measures what arrives. It holds no code of its own;
// its sub-packages each do one job:
//
//   - engine: the contract every traffic engine keeps (a job in, a result
//     out, a context to cancel) and the frame-size rules they share;
//   - kernel: the kernel's pktgen (net/core/pktgen.c) driven through
//     /proc/thread-self/net/pktgen from a thread in the sender's namespace;
//   - userspace: an AF_PACKET engine for kernels without pktgen;
//   - auto: the choice between the two, with the measured reason;
//   - tcpflow: TCP flows from a sender's namespace to a sink in the
//     receiver's, with TCP_INFO of both ends over time (a TCP run);
//   - sample: the counter sampler (IFLA_STATS64 through per-namespace
//     netlink handles), which only bench uses;
//   - bench: measured runs through a deployed lab, sweeps, throughput
//     searches, per-hop accounting and the verdict on what limited a run;
//     it renders nothing;
//   - report: every result type and how it renders, through one writer
//     per format (WriteOutput);
//   - kstat: the kernel's statistics (CPU times, softnet, IP MIB,
//     conntrack, link speed), exported for bench and for live views;
//   - watch: a whole deployed lab sampled for the live views, and the
//     bench running on it (nslab top);
//   - metrics: a Prometheus collector over watched labs (nslab metrics);
//   - web: the live page of a lab and its server (nslab web).
//
// It keeps the rules stated in package topology's documentation: typed
// results and errors that name no flag, results that render themselves,
// the format chosen by cmd.
package pktgen
