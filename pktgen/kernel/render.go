package kernel

import (
	"fmt"
	"strconv"
	"strings"
)

// Write is one command written to one pktgen proc file: "pgctrl",
// "kpktgend_N" or a device entry such as "veth1@0".
type Write struct {
	File string
	Cmd  string
}

func (w Write) String() string { return fmt.Sprintf("%s: %s", w.File, w.Cmd) }

// Render returns the writes that configure the job, in the order the kernel
// needs them: reset, then per thread its device, then the device's settings
// (xmit_mode before clone_skb and burst, which are checked against it; the
// size before delay and rate, which are derived from it). Starting the run
// is not part of it. Render does not validate: call Validate first.
func (j *Job) Render() []Write {
	ws := []Write{{"pgctrl", "reset"}}
	for i, t := range j.ThreadNumbers() {
		thread := "kpktgend_" + itoa(t)
		dev := j.DeviceName(i)
		ws = append(ws, Write{thread, "rem_device_all"}, Write{thread, "add_device " + dev})
		for _, c := range j.deviceCommands(i) {
			ws = append(ws, Write{dev, c})
		}
	}
	return ws
}

// deviceCommands renders the settings of thread i's device entry.
func (j *Job) deviceCommands(i int) []string {
	var c []string
	add := func(format string, args ...any) { c = append(c, fmt.Sprintf(format, args...)) }
	if j.XmitMode != "" {
		add("xmit_mode %s", j.XmitMode)
	}
	add("count %d", j.Count)
	add("clone_skb %d", j.CloneSKB)
	c = append(c, j.sizeAndRateCommands()...)
	if j.Burst > 1 {
		add("burst %d", j.Burst)
	}
	if j.Frags > 0 {
		add("frags %d", j.Frags)
	}
	c = append(c, j.macCommands()...)
	c = append(c, j.addressCommands(i)...)
	c = append(c, portCommands("udp_dst", j.UDPDstMin, j.UDPDstMax)...)
	c = append(c, portCommands("udp_src", j.UDPSrcMin, j.UDPSrcMax)...)
	if j.Flows > 0 {
		add("flows %d", j.Flows)
	}
	if j.FlowLen > 0 {
		add("flowlen %d", j.FlowLen)
	}
	if j.QueueMapMin != nil {
		add("queue_map_min %d", *j.QueueMapMin)
		add("queue_map_max %d", *j.QueueMapMax)
	}
	c = append(c, j.headerCommands()...)
	for _, f := range j.Flags {
		add("flag %s", f)
	}
	if j.Node != nil && !j.hasFlag("NODE") {
		add("flag NODE")
	}
	return c
}

// sizeAndRateCommands renders the frame size (or sizes) and then the
// rate, which pktgen derives from the size.
func (j *Job) sizeAndRateCommands() []string {
	var c []string
	add := func(format string, args ...any) { c = append(c, fmt.Sprintf(format, args...)) }
	switch {
	case len(j.IMIX) > 0:
		parts := make([]string, len(j.IMIX))
		for k, w := range j.IMIX {
			parts[k] = fmt.Sprintf("%d,%d", w.Frame-FCS, w.Weight)
		}
		add("imix_weights %s", strings.Join(parts, " "))
	case j.FrameMin != 0:
		add("min_pkt_size %d", j.FrameMin-FCS)
		add("max_pkt_size %d", j.FrameMax-FCS)
	case j.Frame != 0:
		add("pkt_size %d", j.Frame-FCS)
	}
	switch {
	case j.RateMbps > 0:
		add("rate %d", j.RateMbps)
	case j.RatePPS > 0:
		add("ratep %d", j.RatePPS)
	default:
		add("delay %d", j.Delay.Nanoseconds())
	}
	return c
}

func (j *Job) macCommands() []string {
	c := []string{fmt.Sprintf("dst_mac %s", j.DstMAC)}
	if j.SrcMAC != nil {
		c = append(c, fmt.Sprintf("src_mac %s", j.SrcMAC))
	}
	if j.DstMACCount > 0 {
		c = append(c, fmt.Sprintf("dst_mac_count %d", j.DstMACCount))
	}
	if j.SrcMACCount > 0 {
		c = append(c, fmt.Sprintf("src_mac_count %d", j.SrcMACCount))
	}
	return c
}

func (j *Job) addressCommands(i int) []string {
	var c []string
	v6 := ""
	if j.DstIP.Is6() {
		v6 = "6"
	}
	if j.DstIPMax.IsValid() && j.DstIPMax != j.DstIP {
		c = append(c, "dst"+v6+"_min "+j.DstIP.String(), "dst"+v6+"_max "+j.DstIPMax.String())
	} else {
		c = append(c, "dst"+v6+" "+j.DstIP.String())
	}
	src, srcMax := j.SrcIP, j.SrcIPMax
	if len(j.ThreadSrcIP) > i {
		src, srcMax = j.ThreadSrcIP[i], j.ThreadSrcIP[i]
	}
	switch {
	case !src.IsValid():
	case src.Is6():
		c = append(c, "src6 "+src.String())
	default:
		if !srcMax.IsValid() {
			srcMax = src
		}
		c = append(c, "src_min "+src.String(), "src_max "+srcMax.String())
	}
	return c
}

func portCommands(prefix string, lo, hi int) []string {
	if lo == 0 && hi == 0 {
		return nil
	}
	if hi == 0 {
		hi = lo
	}
	return []string{fmt.Sprintf("%s_min %d", prefix, lo), fmt.Sprintf("%s_max %d", prefix, hi)}
}

func (j *Job) headerCommands() []string {
	var c []string
	if j.TOS != nil {
		c = append(c, fmt.Sprintf("tos %02x", *j.TOS))
	}
	if j.TrafficClass != nil {
		c = append(c, fmt.Sprintf("traffic_class %02x", *j.TrafficClass))
	}
	if len(j.MPLS) > 0 {
		labels := make([]string, len(j.MPLS))
		for k, l := range j.MPLS {
			labels[k] = fmt.Sprintf("%08x", l)
		}
		c = append(c, "mpls "+strings.Join(labels, ","))
	}
	for _, v := range []struct {
		prefix string
		tag    *VLAN
	}{{"vlan", j.VLAN}, {"svlan", j.SVLAN}} {
		if v.tag != nil {
			c = append(c, fmt.Sprintf("%s_id %d", v.prefix, v.tag.ID), fmt.Sprintf("%s_p %d", v.prefix, v.tag.Priority), fmt.Sprintf("%s_cfi %d", v.prefix, v.tag.CFI))
		}
	}
	if j.SKBPriority != nil {
		c = append(c, fmt.Sprintf("skb_priority %d", *j.SKBPriority))
	}
	if j.Node != nil {
		c = append(c, fmt.Sprintf("node %d", *j.Node))
	}
	return c
}

func itoa(i int) string { return strconv.Itoa(i) }
