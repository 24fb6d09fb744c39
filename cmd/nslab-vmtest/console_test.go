package main

import (
	"errors"
	"strings"
	"testing"
)

// TestReadConsoleLockup: the soft lockup watchdog's line with 90 s or
// more stops the reading (the VM is then stopped and booted once more);
// shorter ones, and a result, do not.
func TestReadConsoleLockup(t *testing.T) {
	short := "=== RUN   TestX\n[  168.6] watchdog: BUG: soft lockup - CPU#0 stuck for 27s! [x:530]\n"
	if rc, err := readConsole(strings.NewReader(short+resultMarker+" 0\n"), false, &lastLines{n: 5}); err != nil || rc != 0 {
		t.Errorf("a 27 s lockup and then the result: rc %d, %v", rc, err)
	}
	long := short + "[  252.6] watchdog: BUG: soft lockup - CPU#0 stuck for 105s! [x:530]\n" + resultMarker + " 0\n"
	if _, err := readConsole(strings.NewReader(long), false, &lastLines{n: 5}); !errors.Is(err, errLocked) || !strings.Contains(err.Error(), "stuck for 105s") {
		t.Errorf("a 105 s lockup: %v", err)
	}
}
