package caps

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEmulated: the word alone on the command line counts, a word that
// only contains it does not, and an unreadable file is no emulation.
func TestEmulated(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"console=ttyS0 panic=-1 nslab.emulated_cpus quiet", true},
		{"console=ttyS0 nslab.emulated_cpus=0x", false},
		{"BOOT_IMAGE=/vmlinuz root=/dev/vda1", false},
	} {
		p := filepath.Join(dir, "cmdline")
		if err := os.WriteFile(p, []byte(tc.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := emulated(p); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.line, got, tc.want)
		}
	}
	if emulated(filepath.Join(dir, "none")) {
		t.Error("a missing command line is emulation")
	}
	if c := Or(&Capabilities{Rootless: true}); !c.Rootless || c.BPF() {
		t.Errorf("Or of a given value: %+v", c)
	}
}
