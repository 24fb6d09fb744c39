package kernel

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func validJob() *Job {
	return &Job{Device: "veth1", DeviceKind: "veth", DeviceMTU: 1500, Count: 10, Frame: 64,
		DstIP: netip.MustParseAddr("10.0.2.1"), DstMAC: mac("02:00:00:00:00:01")}
}

func TestValidateRules(t *testing.T) {
	if err := validJob().Validate(); err != nil {
		t.Fatalf("valid job refused: %v", err)
	}
	cases := []struct {
		name string
		edit func(j *Job)
		msg  string
	}{
		{"no device", func(j *Job) { j.Device = "" }, "no device"},
		{"no count or duration", func(j *Job) { j.Count = 0 }, "set a count or a duration"},
		{"frame below minimum", func(j *Job) { j.Frame = 60 }, "below the minimum of 64"},
		{"ipv6 frame below minimum", func(j *Job) { j.DstIP = netip.MustParseAddr("fd00::1") }, "below the minimum of 82"},
		{"frame above mtu", func(j *Job) { j.Frame = 1600 }, "exceeds what MTU 1500 carries (1518 bytes)"},
		{"two size kinds", func(j *Job) { j.FrameMin, j.FrameMax = 64, 128 }, "give one of frame"},
		{"bad range", func(j *Job) { j.Frame, j.FrameMin, j.FrameMax = 0, 128, 64 }, "smallest first"},
		{"rate without size", func(j *Job) { j.Frame, j.RatePPS = 0, 1000 }, "rate set with no frame size"},
		{"two rates", func(j *Job) { j.RatePPS, j.RateMbps = 1000, 10 }, "give one of delay, rate"},
		{"clone_skb on veth", func(j *Job) { j.CloneSKB = 100 }, "clone_skb 100 on a veth device"},
		{"burst on veth", func(j *Job) { j.Burst = 32 }, "burst 32 on a veth device"},
		{"burst with queue_xmit", func(j *Job) { j.DeviceKind, j.XmitMode, j.Burst = "", XmitQueue, 8 }, "burst with xmit_mode queue_xmit"},
		{"clone with netif_receive", func(j *Job) { j.DeviceKind, j.XmitMode, j.CloneSKB = "", XmitNetifReceive, 8 }, "clone_skb with xmit_mode netif_receive"},
		{"bad xmit mode", func(j *Job) { j.XmitMode = "fast" }, "use start_xmit"},
		{"no destination", func(j *Job) { j.DstIP = netip.Addr{} }, "no destination address"},
		{"no dst mac", func(j *Job) { j.DstMAC = nil }, "pktgen does no ARP"},
		{"mixed families", func(j *Job) { j.SrcIP = netip.MustParseAddr("fd00::2") }, "different IP versions"},
		{"dst range order", func(j *Job) { j.DstIPMax = netip.MustParseAddr("10.0.1.1") }, "smallest first"},
		{"ports", func(j *Job) { j.UDPDstMin, j.UDPDstMax = 90, 10 }, "UDP port range 90-10"},
		{"unknown flag", func(j *Job) { j.Flags = []string{"NODE_ALLOC"} }, `unknown flag "NODE_ALLOC"`},
		{"flows", func(j *Job) { j.Flows = 70000 }, "flows must be 0..65535"},
		{"vlan id", func(j *Job) { j.VLAN = &VLAN{ID: 5000} }, "vlan: id 0..4095"},
		{"svlan without vlan", func(j *Job) { j.SVLAN = &VLAN{ID: 5} }, "svlan needs vlan"},
		{"per-thread sources", func(j *Job) { j.Threads, j.ThreadSrcIP = 2, []netip.Addr{netip.MustParseAddr("10.0.1.1")} }, "give one per thread"},
		{"queue map", func(j *Job) { lo := 3; j.QueueMapMin = &lo }, "queue_map"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := validJob()
			c.edit(j)
			err := j.Validate()
			var inv InvalidJob
			if !errors.As(err, &inv) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("want %q, got %v", c.msg, err)
			}
		})
	}
}

func TestValidateAllowsPhysicalClone(t *testing.T) {
	j := validJob()
	j.DeviceKind, j.CloneSKB, j.Burst, j.Duration, j.Count = "", 1000, 32, time.Second, 0
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
}
