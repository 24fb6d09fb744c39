package lab

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMissingFeature: only a kernel lacking what the table uses is
// reported as missing kernel configuration; a table refused for another
// reason (a full socket buffer, a bad rule) is reported as it is.
func TestMissingFeature(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("conn.Receive: %w", errors.Join(unix.ENOENT)), true},
		{fmt.Errorf("table: %w", unix.EAFNOSUPPORT), true},
		{fmt.Errorf("netlink receive: %w", unix.ENOBUFS), false},
		{fmt.Errorf("conn.Receive: %w", errors.Join(unix.EINVAL)), false},
	} {
		if got := missingFeature(c.err); got != c.want {
			t.Errorf("%v: %v, want %v", c.err, got, c.want)
		}
	}
}
