package userspace

import (
	"context"
	"testing"
	"time"
)

// TestPacerGivesUpStalledTime: a sender found 5 ms late (its thread did not
// run) takes up the schedule from now, counts the 5 ms as given up and
// sends no burst; a lag under maxLag is caught up and not counted.
func TestPacerGivesUpStalledTime(t *testing.T) {
	t0 := time.Now().Add(-time.Hour) // in the past: next never sleeps
	p := pacer{start: t0, gap: 25 * time.Microsecond}
	// 100 handed: due at t0+2.5ms; found at t0+7.5ms, 5 ms late.
	n, _, ok := p.next(context.Background(), 100, 64, t0.Add(7500*time.Microsecond))
	if !ok || p.skipped != 5*time.Millisecond {
		t.Fatalf("skipped %v (ok %v), want 5ms", p.skipped, ok)
	}
	if n != 1 {
		t.Errorf("after a stall it sends %d at once, want 1 (no burst)", n)
	}
	// 200 handed: due at start+5ms; found 0.5 ms late: caught up, not given up.
	late := p.start.Add(5500 * time.Microsecond)
	n, _, _ = p.next(context.Background(), 200, 64, late)
	if p.skipped != 5*time.Millisecond {
		t.Errorf("a %v lag added to skipped: %v", 500*time.Microsecond, p.skipped)
	}
	if want := int((500*time.Microsecond+paceWindow)/p.gap) + 1; n != want {
		t.Errorf("0.5 ms behind it sends %d, want %d", n, want)
	}
}
