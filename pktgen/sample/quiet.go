package sample

import "time"

// Settle is how long ReadQuiet waits after it reads the counters before
// it asks its taps again: longer than a received frame waits in a CPU's
// backlog between the interface's count and the tap's (the next softirq,
// at most a few ticks of 4 ms on a busy CPU). Each reading costs a run
// twice this at least: 50 ms made make test's privileged benches 17 s
// longer.
const Settle = 20 * time.Millisecond

// quietTries bounds the readings ReadQuiet makes before it takes the last.
const quietTries = 20

// ReadQuiet reads counters (read) at a moment no control frame passed the
// taps, so that what the taps counted and what the interfaces counted end
// at the same frame. A tap and an interface counter cannot be read at one
// instant, and a control frame (an OSPF hello, an ARP) comes at any time:
// one that passes between the two reads is in one count and not the
// other, and the run's accounting is off by one.
//
// ReadQuiet asks every tap (adding what it counted to totals[i]; with nil
// totals the counts are dropped), reads, waits Settle, asks the taps again
// and reads again. When neither the taps nor the packet counts moved
// meanwhile, the first reading stands: a frame is counted by its tap and
// by its interface within Settle of each other (a sent frame is tapped
// first, a received one counted first and tapped when its CPU's backlog
// gets to it), so one the interfaces had counted at the first read was
// tapped before the first ask, and one they had not is tapped after the
// second. Otherwise what the taps counted is added and it tries again, up
// to 20 times (then the last reading stands, and an accounting off by a
// frame says so itself). read returns the counters to compare (those the
// taps watch); taps may hold nil entries, and a tap is asked in the
// namespace it was opened in (its packet socket keeps it).
func ReadQuiet(taps []*Neighbours, totals []uint64, read func() ([]Counters, error)) error {
	ask := func() (uint64, error) {
		var moved uint64
		for i, c := range taps {
			if c == nil {
				continue
			}
			n, err := c.Count()
			if err != nil {
				return 0, err
			}
			if totals != nil {
				totals[i] += n
			}
			moved += n
		}
		return moved, nil
	}
	if _, err := ask(); err != nil {
		return err
	}
	for range quietTries {
		first, err := read()
		if err != nil {
			return err
		}
		time.Sleep(Settle)
		moved, err := ask()
		if err != nil {
			return err
		}
		again, err := read()
		if err != nil {
			return err
		}
		if moved == 0 && samePackets(first, again) {
			return nil
		}
	}
	return nil
}

// samePackets reports whether two readings of the same interfaces have the
// same packet counts.
func samePackets(a, b []Counters) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].RxPackets != b[i].RxPackets || a[i].TxPackets != b[i].TxPackets {
			return false
		}
	}
	return true
}
