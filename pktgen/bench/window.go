package bench

import (
	"time"

	"github.com/nslab/nslab/pktgen/sample"
)

// On a path with impairments, queues and delays keep delivering after the
// sender stops, so the receiver's rate is its count over the time it
// received, not over the sender's elapsed time. watchReceiver measures
// that window from the receiver's own counter.

// watchInterval is how often the receiver's counter is read while a run
// on an impaired path goes on (one netlink read: about 0.2 ms).
const watchInterval = 10 * time.Millisecond

// watchReceiver reads the receiver's rx counter every watchInterval until
// the returned stop is called, which returns the receive window: from the
// first read that saw the counter rise to the last (0 when it never rose
// twice). The first packets arrived between that read and the one before:
// the window starts halfway between them.
func watchReceiver(s *sample.Sampler) (stop func() time.Duration) {
	done := make(chan struct{})
	window := make(chan time.Duration, 1)
	go func() {
		var first, last time.Time
		prev, err := s.Read()
		prevAt := time.Now()
		t := time.NewTicker(watchInterval)
		defer t.Stop()
		for err == nil {
			select {
			case <-done:
				window <- last.Sub(first)
				return
			case <-t.C:
			}
			now, err2 := s.Read()
			if err2 != nil {
				break
			}
			at := time.Now()
			if now.Counters[0].RxPackets != prev.Counters[0].RxPackets {
				if first.IsZero() {
					first = prevAt.Add(at.Sub(prevAt) / 2)
				}
				last = at
			}
			prev, prevAt = now, at
		}
		<-done
		window <- 0
	}()
	return func() time.Duration { close(done); return <-window }
}
