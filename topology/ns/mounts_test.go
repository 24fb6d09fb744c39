package ns

import "testing"

// TestMountOf reads mountinfo as the host and a process under ip netns
// exec see it: the run directory is shared in the first, a slave of that
// peer group in the second.
func TestMountOf(t *testing.T) {
	host := `27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
43 27 254:0 /run/netns /run/netns rw,relatime shared:7 - ext4 /dev/vda rw
42 43 0:4 net:[4026532177] /run/netns/hA rw shared:2 - nsfs nsfs rw
50 27 0:30 / /mnt/with\040space rw - tmpfs tmpfs rw
`
	exec := `300 299 254:0 / / rw,relatime master:1 - ext4 /dev/vda rw
301 300 254:0 /run/netns /run/netns rw,relatime master:7 - ext4 /dev/vda rw
`
	h, ok := mountOf(parseMountinfo(host), "/run/netns")
	if !ok || h.point != "/run/netns" || h.shared != 7 || h.master != 0 {
		t.Errorf("host: %+v", h)
	}
	e, ok := mountOf(parseMountinfo(exec), "/run/netns")
	if !ok || e.shared != 0 || e.master != 7 {
		t.Errorf("under ip netns exec: %+v", e)
	}
	if m, _ := mountOf(parseMountinfo(host), "/var/run/x"); m.point != "/" {
		t.Errorf("a directory on the root mount: %+v", m)
	}
	if m, _ := mountOf(parseMountinfo(host), "/mnt/with space/d"); m.point != "/mnt/with space" {
		t.Errorf("escaped mount point: %+v", m)
	}
}
