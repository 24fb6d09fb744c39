package metrics

import (
	"github.com/nslab/nslab/pktgen/kstat"
	"github.com/nslab/nslab/pktgen/sample"
	"github.com/nslab/nslab/pktgen/watch"
	"github.com/prometheus/client_golang/prometheus"
)

// interfaceFamily is one interface counter as a metric family.
type interfaceFamily struct {
	name, help string
	kind       prometheus.ValueType
	value      func(sample.Counters) uint64
}

var ifLabels = []string{"lab", "node", "interface"}

var interfaceFamilies = []interfaceFamily{
	{"nslab_interface_receive_packets_total", "Packets the interface received (IFLA_STATS64).", prometheus.CounterValue, func(c sample.Counters) uint64 { return c.RxPackets }},
	{"nslab_interface_transmit_packets_total", "Packets the interface sent (IFLA_STATS64).", prometheus.CounterValue, func(c sample.Counters) uint64 { return c.TxPackets }},
	{"nslab_interface_receive_bytes_total", "Bytes the interface received, L2 without FCS (IFLA_STATS64).", prometheus.CounterValue, func(c sample.Counters) uint64 { return c.RxBytes }},
	{"nslab_interface_transmit_bytes_total", "Bytes the interface sent, L2 without FCS (IFLA_STATS64).", prometheus.CounterValue, func(c sample.Counters) uint64 { return c.TxBytes }},
	{"nslab_interface_receive_dropped_total", "Received packets the interface dropped (IFLA_STATS64 rx_dropped).", prometheus.CounterValue, func(c sample.Counters) uint64 { return c.RxDropped }},
	{"nslab_interface_transmit_dropped_total", "Packets the interface dropped on sending (IFLA_STATS64 tx_dropped; on veth, the peer's full backlog).", prometheus.CounterValue, func(c sample.Counters) uint64 { return c.TxDropped }},
	{"nslab_interface_receive_errors_total", "Receive errors (IFLA_STATS64).", prometheus.CounterValue, func(c sample.Counters) uint64 { return c.RxErrors }},
	{"nslab_interface_transmit_errors_total", "Transmit errors (IFLA_STATS64).", prometheus.CounterValue, func(c sample.Counters) uint64 { return c.TxErrors }},
	{"nslab_interface_receive_missed_total", "Packets the device missed (IFLA_STATS64 rx_missed_errors).", prometheus.CounterValue, func(c sample.Counters) uint64 { return c.RxMissed }},
	{"nslab_qdisc_dropped_total", "Packets the interface's own root qdisc (an impairment) dropped; 32 bits in the kernel.", prometheus.CounterValue, func(c sample.Counters) uint64 { return c.QdiscDrops }},
	{"nslab_qdisc_backlog_packets", "Packets the interface's own root qdisc holds now.", prometheus.GaugeValue, func(c sample.Counters) uint64 { return c.QdiscQueued }},
}

// ipCounters are the IP MIB counters served per node, besides the
// discards (kstat.IPDiscards).
var ipCounters = []string{"InReceives", "ForwDatagrams", "InDelivers", "OutRequests", "Ip6InReceives", "Ip6OutForwDatagrams", "Ip6InDelivers", "Ip6OutRequests"}

// collectLab sends one lab's families from snapshot s.
func collectLab(ch chan<- prometheus.Metric, l *watch.Lab, s *watch.Snapshot) {
	for _, f := range interfaceFamilies {
		d := prometheus.NewDesc(f.name, f.help, ifLabels, nil)
		for i, t := range l.Targets() {
			ch <- prometheus.MustNewConstMetric(d, f.kind, float64(f.value(s.Interfaces.Counters[i])), l.Name, t.Node, t.Interface)
		}
	}
	ip := prometheus.NewDesc("nslab_ip_mib_total", "A node's IP MIB counter (/proc/net/snmp, snmp6, netstat's IpExt; NeighUnresolvedDiscards: packets its neighbour tables dropped waiting for a next hop's address).",
		[]string{"lab", "node", "counter"}, nil)
	ctEntries := prometheus.NewDesc("nslab_conntrack_entries", "Connections a node's conntrack tracks now.", []string{"lab", "node"}, nil)
	ct := prometheus.NewDesc("nslab_conntrack_total", "A node's conntrack statistic, summed over CPUs (/proc/net/stat/nf_conntrack).", []string{"lab", "node", "counter"}, nil)
	for _, n := range l.Spec.Nodes {
		nc, ok := s.Nodes[n.Name]
		if !ok {
			continue
		}
		for _, k := range append(append([]string(nil), ipCounters...), kstat.IPDiscards...) {
			if v, ok := nc.MIB[k]; ok {
				ch <- prometheus.MustNewConstMetric(ip, prometheus.CounterValue, float64(v), l.Name, n.Name, k)
			}
		}
		for k, v := range nc.Conntrack {
			if k == "entries" {
				ch <- prometheus.MustNewConstMetric(ctEntries, prometheus.GaugeValue, float64(v), l.Name, n.Name)
				continue
			}
			ch <- prometheus.MustNewConstMetric(ct, prometheus.CounterValue, float64(v), l.Name, n.Name, k)
		}
	}
	collectBench(ch, l.Name, s.Bench)
}

// collectBench sends the gauges of the bench running on a lab: whether
// one runs, and its last interval's rate asked for and each hop's rates
// and drops. Nothing but nslab_bench_running 0 when none runs.
func collectBench(ch chan<- prometheus.Metric, labName string, b *watch.BenchStatus) {
	running := 0.0
	if b != nil && b.Running {
		running = 1
	}
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("nslab_bench_running", "1 while a bench runs on the lab.", []string{"lab"}, nil), prometheus.GaugeValue, running, labName)
	if running == 0 || b.Last == nil {
		return
	}
	e := b.Last
	labels := []string{"lab", "traffic", "node", "interface", "role"}
	gauges := []struct {
		name, help string
		value      func(i int) float64
	}{
		{"nslab_bench_hop_receive_pps", "Packets per second a hop of the running bench received in its last interval.", func(i int) float64 { return e.Hops[i].RxPPS }},
		{"nslab_bench_hop_transmit_pps", "Packets per second a hop of the running bench sent in its last interval.", func(i int) float64 { return e.Hops[i].TxPPS }},
		{"nslab_bench_hop_drops", "Packets a hop of the running bench dropped in its last interval.", func(i int) float64 { return float64(e.Hops[i].Drops) }},
	}
	for _, g := range gauges {
		d := prometheus.NewDesc(g.name, g.help, labels, nil)
		for i, h := range e.Hops {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, g.value(i), labName, e.Traffic, h.Node, h.Interface, h.Role)
		}
	}
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("nslab_bench_offered_pps", "The rate per thread the running bench's run asks for (0: as fast as it goes).", []string{"lab", "traffic"}, nil),
		prometheus.GaugeValue, float64(e.OfferedPPS), labName, e.Traffic)
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("nslab_bench_frame_bytes", "The frame size of the running bench's run, with FCS.", []string{"lab", "traffic"}, nil),
		prometheus.GaugeValue, float64(e.Frame), labName, e.Traffic)
}
