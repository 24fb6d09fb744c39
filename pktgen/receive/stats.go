package receive

import (
	"github.com/nslab/nslab/pktgen/measured"
	"math"
	"math/bits"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Accounting of what the reader saw: one-way latency into an HDR
// histogram (HdrHistogram/hdrhistogram-go: percentiles over a wide range
// in fixed memory, to 3 significant digits), the exact minimum, maximum
// and mean beside it, RFC 3550 interarrival jitter, and per sender
// thread a bitmap of the sequence numbers seen, from which unique,
// duplicate and reordered packets and the losses follow.

// latencyMax is the largest latency the histogram holds (100 s); larger
// ones count at that value.
const latencyMax = int64(100 * time.Second)

// Latency is the one-way latency of the packets a run measured, and
// Sequence the accounting by sequence number (package measured).
type (
	Latency  = measured.Latency
	Sequence = measured.Sequence
)

// Tracker accounts for the packets of one run as they arrive. It is not
// safe for concurrent use: one reader feeds it.
type Tracker struct {
	hist      *hdrhistogram.Histogram
	samples   uint64
	min, max  int64
	sum       float64
	negative  uint64
	jitter    float64
	prevTrans int64
	havePrev  bool
	threads   map[int]*seqState
	sizes     map[int]uint64
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{hist: hdrhistogram.New(1, latencyMax, 3), min: math.MaxInt64, threads: map[int]*seqState{}, sizes: map[int]uint64{}}
}

// AddSize counts a received frame of size bytes (with FCS).
func (t *Tracker) AddSize(size int) { t.sizes[size]++ }

// Sizes counts the frames received by size (with FCS); a copy.
func (t *Tracker) Sizes() map[int]uint64 {
	out := make(map[int]uint64, len(t.sizes))
	for k, v := range t.sizes {
		out[k] = v
	}
	return out
}

// Add accounts for one packet of sender thread thread, sent at sentNs and
// received at rxNs (both CLOCK_REALTIME nanoseconds).
func (t *Tracker) Add(thread int, seq uint32, sentNs, rxNs int64) {
	st := t.threads[thread]
	if st == nil {
		st = &seqState{pages: map[uint32]*[pageWords]uint64{}}
		t.threads[thread] = st
	}
	st.add(seq, rxNs)
	lat := rxNs - sentNs
	if lat < 0 {
		t.negative++
		return
	}
	t.samples++
	t.sum += float64(lat)
	t.min, t.max = min(t.min, lat), max(t.max, lat)
	_ = t.hist.RecordValue(min(max(lat, 1), latencyMax)) // in range by construction
	// RFC 3550 section 6.4.1: J += (|D| - J) / 16, D the difference of
	// two consecutive packets' transit times.
	if t.havePrev {
		d := float64(lat - t.prevTrans)
		t.jitter += (math.Abs(d) - t.jitter) / 16
	}
	t.prevTrans, t.havePrev = lat, true
}

// Latency is the latency of what was added, measured as method says.
func (t *Tracker) Latency(method string, resolutionNs int64) *Latency {
	l := &Latency{Method: method, Samples: t.samples, Negative: t.negative, ResolutionNs: resolutionNs}
	if t.samples == 0 {
		return l
	}
	p := t.hist.ValueAtPercentilesSlice([]float64{50, 90, 99, 99.9})
	l.MinNs, l.MaxNs, l.MeanNs, l.JitterNs = t.min, t.max, t.sum/float64(t.samples), t.jitter
	// The histogram's values are its buckets' highest equivalents: none
	// may pass the exact maximum.
	l.P50Ns, l.P90Ns, l.P99Ns, l.P999Ns = min(p[0], t.max), min(p[1], t.max), min(p[2], t.max), min(p[3], t.max)
	if enc, err := t.hist.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
		l.Histogram = string(enc)
	}
	return l
}

// DecodeHistogram reads a Latency's Histogram back (measured.DecodeHistogram).
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) { return measured.DecodeHistogram(s) }

// Histogram is a copy of the latency histogram (nanoseconds).
func (t *Tracker) Histogram() *hdrhistogram.Histogram { return t.hist.Clone() }

// Sequence accounts for the sequence numbers of each thread against what
// the sender says it sent: sent[thread] packets numbered from first.
func (t *Tracker) Sequence(first uint32, sent map[int]uint64) *Sequence {
	s := &Sequence{}
	for thread, n := range sent {
		st := t.threads[thread]
		if st == nil {
			s.Lost += n
			continue
		}
		unique, outside := st.unique(first, n)
		s.UniqueReceived += unique
		s.Outside += outside
		s.Lost += n - unique
		s.Duplicates += st.duplicates
		s.Reordered += st.reordered
		if st.gap > s.LongestGapPackets {
			s.LongestGapPackets, s.LongestGapNs = st.gap, st.gapNs
		}
		st.lossRuns(first, n, s)
	}
	var runs, lost uint64
	for length, k := range s.LossRuns {
		runs, lost = runs+k, lost+length*k
	}
	if runs > 0 {
		s.MeanLossRun = float64(lost) / float64(runs)
	}
	for thread, st := range t.threads {
		if _, ok := sent[thread]; !ok { // a thread the sender did not have
			s.Outside += st.count
		}
	}
	return s
}

// pageBits is how many sequence numbers one bitmap page holds.
const (
	pageBits  = 1 << 16
	pageWords = pageBits / 64
)

// seqState is one sender thread's sequence numbers.
type seqState struct {
	pages      map[uint32]*[pageWords]uint64
	count      uint64 // packets added
	duplicates uint64
	reordered  uint64
	highest    uint32
	highestRx  int64
	any        bool
	gap        uint64 // longest skip, in sequence numbers
	gapNs      int64
}

// add records seq, received at rxNs.
func (s *seqState) add(seq uint32, rxNs int64) {
	s.count++
	page := s.pages[seq/pageBits]
	if page == nil {
		page = new([pageWords]uint64)
		s.pages[seq/pageBits] = page
	}
	w, bit := (seq%pageBits)/64, uint64(1)<<(seq%64)
	if page[w]&bit != 0 {
		s.duplicates++
		return
	}
	page[w] |= bit
	switch {
	case !s.any:
		s.highest, s.highestRx, s.any = seq, rxNs, true
	case seq < s.highest:
		s.reordered++
	default:
		if skipped := uint64(seq - s.highest - 1); skipped > s.gap {
			s.gap, s.gapNs = skipped, rxNs-s.highestRx
		}
		s.highest, s.highestRx = seq, rxNs
	}
}

// lossRuns adds the runs of sequence numbers in [first, first+n) never
// seen to out.LossRuns, by length.
func (s *seqState) lossRuns(first uint32, n uint64, out *Sequence) {
	var run uint64
	end := func() {
		if run > 0 {
			if out.LossRuns == nil {
				out.LossRuns = map[uint64]uint64{}
			}
			out.LossRuns[run]++
			run = 0
		}
	}
	for i := uint64(0); i < n; i++ {
		seq := uint64(first) + i
		page := s.pages[uint32(seq/pageBits)]
		if page != nil && page[(seq%pageBits)/64]&(uint64(1)<<(seq%64)) != 0 {
			end()
		} else {
			run++
		}
	}
	end()
}

// unique counts the sequence numbers seen in [first, first+n), and those
// seen outside it.
func (s *seqState) unique(first uint32, n uint64) (in, outside uint64) {
	for p, page := range s.pages {
		for w, word := range page {
			for word != 0 {
				b := uint64(bits.TrailingZeros64(word))
				word &= word - 1
				seq := uint64(p)*pageBits + uint64(w)*64 + b
				if seq >= uint64(first) && seq < uint64(first)+n {
					in++
				} else {
					outside++
				}
			}
		}
	}
	return in, outside
}
