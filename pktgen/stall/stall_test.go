package stall

import (
	"testing"
	"time"

	"github.com/nslab/nslab/internal/labtest"
)

// TestMerge: the timers one stall delayed make one stall per CPU, from
// the earliest expiry to the last run; stalls apart stay apart.
func TestMerge(t *testing.T) {
	ms := int64(time.Millisecond)
	got := merge([]event{
		{cpu: 1, ran: 10 * ms, late: 4 * ms}, // 6..10
		{cpu: 1, ran: 10*ms + 20000, late: 2 * ms},
		{cpu: 0, ran: 10 * ms, late: 3 * ms}, // the other CPU: apart
		{cpu: 1, ran: 30 * ms, late: 2 * ms}, // 28..30: apart
		{cpu: 1, ran: 11 * ms, late: 5 * ms}, // 6..11: the same stall, longer
	})
	want := []span{{cpu: 1, start: 6 * ms, end: 11 * ms, late: 5 * ms}, {cpu: 0, start: 7 * ms, end: 10 * ms, late: 3 * ms}, {cpu: 1, start: 28 * ms, end: 30 * ms, late: 2 * ms}}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("stall %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	s := Summarize([]int{0, 1}, (monoClock{}).stalls(got), time.Millisecond)
	if s.Stalls != 3 || s.LongestNs != 5*time.Millisecond || s.TotalNs != 10*time.Millisecond {
		t.Errorf("summary %+v", s)
	}
}

// TestPrivilegedWatcherSeesItsTimers: with a threshold of one nanosecond
// every hard timer that ran at all late is reported, so the watcher's
// own 1 ms timers show on both CPUs, the program counts the expiries
// (at least one per millisecond per CPU watched), and most timer
// interrupts come before the default threshold (a machine whose every
// other timer is a millisecond late is not idle).
func TestPrivilegedWatcherSeesItsTimers(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	w, err := Start([]int{0, 1}, []int{0, 1}, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	stalls, seen, err := w.Stop()
	if err != nil {
		t.Fatal(err)
	}
	per := map[int]int{}
	small := 0
	for _, s := range stalls {
		per[s.CPU]++
		if s.Late < DefaultThreshold {
			small++
		}
	}
	t.Logf("%d expiries seen; %d late ones per cpu %v, %d under %v", seen, len(stalls), per, small, DefaultThreshold)
	if seen < 2*250 || per[0] < 100 || per[1] < 100 || small <= len(stalls)/2 {
		t.Errorf("%d expiries, late timers per cpu %v, %d of %d under %v", seen, per, small, len(stalls), DefaultThreshold)
	}
}

// TestPrivilegedWatcherQuiet: at the default threshold, a second of an
// idle machine shows few stalls, each at least the threshold long and
// within the watch.
func TestPrivilegedWatcherQuiet(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	t0 := time.Now()
	w, err := Start([]int{0, 1}, []int{0, 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	stalls, seen, err := w.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d expiries, stalls %+v", seen, stalls)
	for _, s := range stalls {
		if s.Late < DefaultThreshold || s.End.Before(t0) || s.End.After(time.Now()) || s.Start.After(s.End) {
			t.Errorf("stall %+v outside the watch or below the threshold", s)
		}
	}
}
