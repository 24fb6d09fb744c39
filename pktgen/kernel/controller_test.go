package kernel

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeProc answers like /proc/net/pktgen of one namespace: threads take
// devices, device files take parameters and say "Result: OK: ...", start
// blocks until every device has sent its count or until stop. With lag set
// it acts as a kernel whose threads are late: reset, rem_device_all, start
// and stop only post a request, which the simulated kernel thread takes up
// on every lag-th read, in the kernel's order (stop, run, remove all), and
// start returns at once. It is the test double at the procfs boundary; the
// real kernel path runs in the VM tests.
type fakeProc struct {
	mu       sync.Mutex
	present  bool
	cpus     int
	writes   []Write
	threads  map[int][]string
	results  map[string]string // file -> Result text
	counts   map[string]uint64
	sent     map[string]uint64
	running  []string // a run of someone else
	active   bool     // our run is under way (start blocks)
	stopped  chan struct{}
	refuse   map[string]error  // command word -> write error
	answer   map[string]string // command word -> Result text instead of OK
	loads    int
	loadable bool

	lag      int          // reads between two passes of the kernel thread; 0: no lag
	reads    int          // reads since the last pass
	posted   map[int]bool // thread -> rem_device_all posted
	postRun  bool
	postStop bool
	going    map[string]bool // device -> running (lag mode)
	begun    map[string]bool // device -> taken up by its thread
}

func newFake() *fakeProc {
	return &fakeProc{present: true, cpus: 2, threads: map[int][]string{}, results: map[string]string{},
		counts: map[string]uint64{}, sent: map[string]uint64{}, refuse: map[string]error{}, answer: map[string]string{},
		posted: map[int]bool{}, going: map[string]bool{}, begun: map[string]bool{}}
}

func (f *fakeProc) controller() *Controller {
	direct := func(fn func() error) error { return fn() }
	return &Controller{Namespace: "ns1", files: f, run: direct, runAlone: direct, load: f.load}
}

func (f *fakeProc) load() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads++
	if !f.loadable {
		return errors.New("no module")
	}
	f.present = true
	return nil
}

func (f *fakeProc) list() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.present {
		return nil, &fs.PathError{Op: "open", Path: DefaultDir, Err: os.ErrNotExist}
	}
	names := []string{"pgctrl"}
	for i := 0; i < f.cpus; i++ {
		names = append(names, fmt.Sprintf("kpktgend_%d", i))
	}
	for _, devs := range f.threads {
		names = append(names, devs...)
	}
	return names, nil
}

func (f *fakeProc) write(file, cmd string) error {
	f.mu.Lock()
	f.writes = append(f.writes, Write{file, cmd})
	word, arg, _ := strings.Cut(cmd, " ")
	if err := f.refuse[word]; err != nil {
		f.mu.Unlock()
		return err
	}
	switch {
	case file == "pgctrl":
		return f.control(word) // unlocks
	case strings.HasPrefix(file, "kpktgend_"):
		var n int
		fmt.Sscanf(file, "kpktgend_%d", &n)
		switch {
		case word == "rem_device_all" && f.lag > 0:
			f.posted[n] = true
			f.results[file] = "OK: rem_device_all"
		case word == "rem_device_all":
			f.threads[n] = nil
			f.results[file] = "OK: rem_device_all"
		default:
			f.threads[n] = append(f.threads[n], arg)
			f.results[file] = "OK: add_device=" + arg
		}
	default:
		if a, ok := f.answer[word]; ok {
			f.results[file] = a
			break
		}
		if word == "count" {
			var n uint64
			fmt.Sscanf(arg, "%d", &n)
			f.counts[file] = n
		}
		f.results[file] = "OK: " + word + "=" + arg
	}
	f.mu.Unlock()
	return nil
}

// control handles pgctrl; it is called locked and unlocks.
func (f *fakeProc) control(word string) error {
	if f.lag > 0 {
		switch word {
		case "reset":
			for n := 0; n < f.cpus; n++ {
				f.posted[n] = true
			}
		case "start":
			f.postRun = true
		case "stop":
			f.postStop = true
		}
		f.mu.Unlock()
		return nil
	}
	switch word {
	case "reset":
		f.threads = map[int][]string{}
	case "stop":
		if f.stopped != nil {
			close(f.stopped)
			f.stopped = nil
		}
	case "start":
		endless := false
		for _, devs := range f.threads {
			for _, d := range devs {
				if f.counts[d] == 0 {
					endless = true
				}
				f.sent[d] = f.counts[d]
			}
		}
		if endless {
			stop := make(chan struct{})
			f.stopped, f.active = stop, true
			f.mu.Unlock()
			<-stop
			f.mu.Lock()
			f.active = false
			for _, devs := range f.threads {
				for _, d := range devs {
					f.sent[d] = 4242
				}
			}
		}
		for _, devs := range f.threads {
			for _, d := range devs {
				f.finish(d)
			}
		}
	}
	f.mu.Unlock()
	return nil
}

// finish ends device d's run with the result line the kernel writes.
func (f *fakeProc) finish(d string) {
	f.begun[d], f.going[d] = true, false
	f.results[d] = fmt.Sprintf("OK: 1000(c900+d100) usec, %d (60byte,0frags)\n  %dpps 0Mb/sec (%dbps) errors: 0", f.sent[d], f.sent[d]*1000, f.sent[d]*1000*480)
}

// pass is one late pass of the kernel threads (lag mode): counted runs
// taken up at an earlier pass end, then the posted stop, start and
// removals are taken up in the kernel's order.
func (f *fakeProc) pass() {
	for d, on := range f.going {
		if on && f.counts[d] > 0 {
			f.sent[d] = f.counts[d]
			f.finish(d)
		}
	}
	if f.postStop {
		for d, on := range f.going {
			if on {
				f.sent[d] = 4242
				f.finish(d)
			}
		}
		f.postStop = false
	}
	if f.postRun {
		for _, devs := range f.threads {
			for _, d := range devs {
				f.begun[d], f.going[d] = true, true
			}
		}
		f.postRun = false
	}
	for n := range f.posted {
		for _, d := range f.threads[n] {
			delete(f.going, d)
			delete(f.begun, d)
		}
		f.threads[n] = nil
		delete(f.posted, n)
	}
}

// held reports whether a thread holds device d.
func (f *fakeProc) held(d string) bool {
	for _, devs := range f.threads {
		if slices.Contains(devs, d) {
			return true
		}
	}
	return false
}

func (f *fakeProc) read(file string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lag > 0 {
		if f.reads++; f.reads >= f.lag {
			f.pass()
			f.reads = 0
		}
	}
	if strings.HasPrefix(file, "kpktgend_") {
		var n int
		fmt.Sscanf(file, "kpktgend_%d", &n)
		var running []string
		if n == 0 {
			running = f.running
		}
		var stopped []string
		for _, d := range f.threads[n] {
			if f.active || f.going[d] {
				running = append(running, d)
			} else {
				stopped = append(stopped, d)
			}
		}
		return fmt.Sprintf("Running: %s\nStopped: %s\nResult: %s\n", strings.Join(running, " "), strings.Join(stopped, " "), f.results[file]), nil
	}
	if file != "pgctrl" && !f.held(file) {
		return "", &fs.PathError{Op: "open", Path: DefaultDir + "/" + file, Err: os.ErrNotExist}
	}
	started := 0
	if f.begun[file] || f.active {
		started = 10
	}
	return fmt.Sprintf("Params: count %d  min_pkt_size: 60  max_pkt_size: 60\n     Flags: \nCurrent:\n     pkts-sofar: %d  errors: 0\n     started: %dus  stopped: 1010us idle: 100us\nResult: %s\n",
		f.counts[file], f.sent[file], started, f.results[file]), nil
}

func (f *fakeProc) commands() []Write {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Write(nil), f.writes...)
}

func TestControllerRun(t *testing.T) {
	f := newFake()
	job := validJob()
	job.Threads, job.Count = 2, 100
	res, err := f.controller().Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	// Render's resets are not written where no thread holds a device; the
	// last reset removes the run's devices thread by thread.
	var want []Write
	for _, w := range job.Render() {
		if w.File != "pgctrl" && w.Cmd != "rem_device_all" {
			want = append(want, w)
		}
	}
	want = append(want, Write{"pgctrl", "start"}, Write{"kpktgend_0", "rem_device_all"}, Write{"kpktgend_1", "rem_device_all"})
	if got := f.commands(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("writes:\n%v\nwant:\n%v", got, want)
	}
	if len(res.Devices) != 2 || res.Devices[0].Name != "veth1@0" || res.Devices[1].Result.Sent != 100 || res.Stopped {
		t.Fatalf("result %+v", res)
	}
	sum := Summarize(res, 64, "kernel pktgen")
	if sum.Sent != 200 || len(sum.Threads) != 2 || sum.Elapsed != time.Millisecond { // not the clock: the fake's figures
		t.Errorf("summary %+v", sum)
	}
}

// TestControllerKernelRefusal: a write the kernel refuses stops the run with
// the kernel's error, and pktgen is reset.
func TestControllerKernelRefusal(t *testing.T) {
	f := newFake()
	f.refuse["clone_skb"] = explainErrno(errENOTSUPP)
	job := validJob()
	job.CloneSKB = 10
	_, err := f.controller().RunUnchecked(context.Background(), job)
	if err == nil || !strings.Contains(err.Error(), `"clone_skb 10" > veth1`) || !strings.Contains(err.Error(), "ENOTSUPP") {
		t.Fatalf("got %v", err)
	}
	assertReset(t, f)
}

func TestControllerResultNotOK(t *testing.T) {
	f := newFake()
	f.answer["dst_mac"] = `No such parameter "dst_mac"`
	_, err := f.controller().Run(context.Background(), validJob())
	if err == nil || !strings.Contains(err.Error(), `kernel says "Result: No such parameter \"dst_mac\""`) {
		t.Fatalf("got %v", err)
	}
	assertReset(t, f)
}

// assertReset checks that no thread holds a device any more and that the
// last write removed them.
func assertReset(t *testing.T, f *fakeProc) {
	t.Helper()
	ws := f.commands()
	if last := ws[len(ws)-1]; last.Cmd != "rem_device_all" {
		t.Errorf("last write %v, want a rem_device_all", last)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for n, devs := range f.threads {
		if len(devs) > 0 {
			t.Errorf("kpktgend_%d still holds %v", n, devs)
		}
	}
}

func TestControllerBusy(t *testing.T) {
	f := newFake()
	f.running = []string{"veth9"}
	_, err := f.controller().Run(context.Background(), validJob())
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "kpktgend_0 sends on veth9") {
		t.Fatalf("got %v", err)
	}
	if ws := f.commands(); len(ws) != 0 {
		t.Errorf("a refused run wrote %v", ws)
	}
}

func TestControllerDurationStops(t *testing.T) {
	f := newFake()
	job := validJob()
	job.Count, job.Duration = 0, 30*time.Millisecond
	t0 := time.Now()
	res, err := f.controller().Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(t0) < job.Duration || !res.Stopped || res.Devices[0].Result.Sent != 4242 {
		t.Fatalf("result %+v after %v", res, time.Since(t0))
	}
	ws := f.commands()
	if fmt.Sprint(ws[len(ws)-3:]) != fmt.Sprint([]Write{{"pgctrl", "start"}, {"pgctrl", "stop"}, {"kpktgend_0", "rem_device_all"}}) {
		t.Errorf("tail of writes %v", ws[len(ws)-3:])
	}
}

func TestControllerCancel(t *testing.T) {
	f := newFake()
	job := validJob()
	job.Count, job.Duration = 0, time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	res, err := f.controller().Run(ctx, job)
	if !errors.Is(err, context.Canceled) || res == nil || res.Devices[0].Result.Sent != 4242 {
		t.Fatalf("got %+v, %v", res, err)
	}
	assertReset(t, f)
}

// TestControllerLateKernelThreads: the kernel threads take requests up late
// (a busy or emulated machine). Runs back to back keep their devices (a
// late removal must not take the next run's device away), a count run's
// result is read only after it really ran, and a timed run is timed and
// stopped although the start write returned at once.
func TestControllerLateKernelThreads(t *testing.T) {
	for _, lag := range []int{1, 3, 7} {
		f := newFake()
		f.lag = lag
		c := f.controller()
		for i := range 3 {
			job := validJob()
			job.Threads, job.Count = 2, uint64(100+i)
			res, err := c.Run(context.Background(), job)
			if err != nil {
				t.Fatalf("lag %d, run %d: %v", lag, i, err)
			}
			if len(res.Devices) != 2 || !res.Devices[0].Result.OK || res.Devices[1].Result.Sent != job.Count || res.Stopped {
				t.Fatalf("lag %d, run %d: result %+v", lag, i, res.Devices)
			}
			assertReset(t, f)
		}
		job := validJob()
		job.Count, job.Duration = 0, 30*time.Millisecond
		res, err := c.Run(context.Background(), job)
		if err != nil || !res.Stopped || res.Devices[0].Result.Sent != 4242 {
			t.Fatalf("lag %d, timed run: %+v, %v", lag, res, err)
		}
		assertReset(t, f)
	}
}

func TestControllerMissingPktgen(t *testing.T) {
	f := newFake()
	f.present = false
	_, err := f.controller().Run(context.Background(), validJob())
	if !errors.Is(err, ErrNoPktgen) || !strings.Contains(err.Error(), "CONFIG_NET_PKTGEN") || f.loads != 1 {
		t.Fatalf("loads %d, got %v", f.loads, err)
	}
	f.loadable = true
	if _, err := f.controller().Run(context.Background(), validJob()); err != nil || f.loads != 2 {
		t.Fatalf("after a successful load: loads %d, %v", f.loads, err)
	}
}

func TestControllerTooManyThreads(t *testing.T) {
	f := newFake()
	job := validJob()
	job.Threads = 3
	_, err := f.controller().Run(context.Background(), job)
	if err == nil || !strings.Contains(err.Error(), "no thread kpktgend_2") {
		t.Fatalf("got %v", err)
	}
}
