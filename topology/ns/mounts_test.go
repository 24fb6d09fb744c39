package ns

import (
	"strings"
	"testing"
)

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

// FuzzParseMountinfo: any mountinfo text parses, never panics; a line
// with a mount point gives an entry whose mount point has no escapes
// left in the form \ooo.
func FuzzParseMountinfo(f *testing.F) {
	f.Add("27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n43 27 254:0 /run/netns /run/netns rw,relatime shared:7 - ext4 /dev/vda rw\n")
	f.Add("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n")
	f.Add("50 27 0:30 / /mnt/with\\040space rw - tmpfs tmpfs rw\n")
	f.Add("1 2 3 4 5 6 shared:x master:-1 -\n")
	f.Add("a b c d \\0 f\n")
	f.Fuzz(func(t *testing.T, text string) {
		entries := parseMountinfo(text)
		if len(entries) > strings.Count(text, "\n")+1 {
			t.Fatalf("%d entries from %d lines", len(entries), strings.Count(text, "\n")+1)
		}
		for _, e := range entries {
			if e.shared < 0 || e.master < 0 {
				t.Fatalf("peer groups %d, %d from %q", e.shared, e.master, text)
			}
		}
		_, _ = mountOf(parseMountinfo(text), "/run/netns")
	})
}
