package lab

import "testing"

// TestOnlyRefusedLines: vtysh -b's output of a file with a line FRR
// refuses, as FRR 8.4 prints it (the refused line, then the processing
// failure it ends with), is refused lines only; anything else it says is
// not.
func TestOnlyRefusedLines(t *testing.T) {
	for _, c := range []struct {
		out  string
		want bool
	}{
		{"line 11: % Unknown command[21]: \treistribute bgp\nConfiguration file[/etc/frr/frr.conf] processing failure: 2\n", true},
		{"line 11: % Unknown command[21]: \treistribute bgp\n", true},
		{"line 11: % Unknown command[21]: \treistribute bgp\nbgpd is not running\n", false},
		{"Configuration file[/etc/frr/frr.conf] processing failure: 2\n", false},
		{"", false},
	} {
		if got := onlyRefusedLines([]byte(c.out)); got != c.want {
			t.Errorf("onlyRefusedLines(%q) = %v, want %v", c.out, got, c.want)
		}
	}
}
