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
	p := pacer{start: t0, gap: 25 * time.Microsecond, last: t0}
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

// TestPacerSlowSenderIsNoStall: a sender that comes back every 100 µs and
// sends one packet of a 25 µs schedule falls 75 µs further behind at every
// turn. It gives up its schedule when more than maxLag behind, as after a
// stall, but it ran all along: nothing is counted as stalled time, so a
// verdict sees a sender too slow for its rate (CI56: the VM's sender sent
// 30,079 pps of 50,000 and was called "offered rate" with 264 ms stalled).
func TestPacerSlowSenderIsNoStall(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	p := pacer{start: t0, gap: 25 * time.Microsecond, last: t0}
	now, resets := t0, 0
	for handed := uint64(0); handed < 100; handed++ {
		start := p.start
		if _, _, ok := p.next(context.Background(), handed, 64, now); !ok {
			t.Fatal("next gave up")
		}
		if p.start != start {
			resets++
		}
		now = now.Add(100 * time.Microsecond)
	}
	if resets == 0 {
		t.Errorf("100 turns 75 µs further behind each never took up the schedule again")
	}
	if p.skipped != 0 {
		t.Errorf("a sender that ran every 100 µs counted %v as stalled", p.skipped)
	}
}

// TestPacerCatchesUpALateTimer: at 898 pps (a 1.11 ms gap) a sender
// 1.5 ms late owes two packets: it sends both and keeps its schedule;
// 20 ms late (18 packets, more than maxOwed) it takes it up from now.
func TestPacerCatchesUpALateTimer(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	gap := time.Second / 898
	p := pacer{start: t0, gap: gap, last: t0}
	n, _, _ := p.next(context.Background(), 10, 64, t0.Add(10*gap+1500*time.Microsecond))
	if p.start != t0 || p.skipped != 0 {
		t.Errorf("1.5 ms late at %v a packet: schedule moved by %v, %v counted as stalled", gap, p.start.Sub(t0), p.skipped)
	}
	if n != 2 {
		t.Errorf("1.5 ms late it sends %d, want the 2 it owes", n)
	}
	n, _, _ = p.next(context.Background(), 12, 64, t0.Add(12*gap+20*time.Millisecond))
	if p.skipped != 20*time.Millisecond || n != 1 {
		t.Errorf("20 ms late: %v counted as stalled and %d sent, want 20ms and 1", p.skipped, n)
	}
}
