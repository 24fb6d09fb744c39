package main

import (
	"errors"
	"strings"
	"testing"
)

// TestReadConsoleLockup: the soft lockup watchdog's line with 45 s or
// more stops the reading (the VM is then stopped and booted once more,
// for the packages that had not passed, as ran notes them); shorter ones,
// and a result, do not.
func TestReadConsoleLockup(t *testing.T) {
	short := "=== RUN   TestX\n" + packageMarker + "pktgen_kernel exit 0\n" + packageMarker + "topology_lab exit 1\n" +
		"[  168.6] watchdog: BUG: soft lockup - CPU#0 stuck for 27s! [x:530]\n"
	ran := map[string]int{}
	if rc, err := readConsole(strings.NewReader(short+resultMarker+" 0\n"), false, &lastLines{n: 5}, ran); err != nil || rc != 0 {
		t.Errorf("a 27 s lockup and then the result: rc %d, %v", rc, err)
	}
	if len(ran) != 2 || ran["pktgen_kernel"] != 0 || ran["topology_lab"] != 1 {
		t.Errorf("packages ended: %v, want pktgen_kernel 0 and topology_lab 1", ran)
	}
	long := short + "[  196.6] watchdog: BUG: soft lockup - CPU#0 stuck for 53s! [x:530]\n" + resultMarker + " 0\n"
	if _, err := readConsole(strings.NewReader(long), false, &lastLines{n: 5}, map[string]int{}); !errors.Is(err, errLocked) || !strings.Contains(err.Error(), "stuck for 53s") {
		t.Errorf("a 53 s lockup: %v", err)
	}
}
