package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nslab/nslab/internal/labname"
	"github.com/nslab/nslab/pktgen/bench/compare"
	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// Duet comparison (bench --variants A,B --duet; Bulej et al., "Duet
// Benchmarking", ICPE 2020): a twin of the lab is deployed beside it, and
// A and B are measured at the same time, one in each, their traffic
// interleaved packet by packet on the same CPUs. Whatever the machine
// does to those CPUs meanwhile (a host that slows the vCPU, a stall) it
// does to both, and each block's ratio cancels it; which lab holds which
// variant is drawn at random every block, so that the twins' own
// differences cancel too. Each router's cost is told apart from the
// other's by the per-device attribution (package softirq): the CPU's
// softirq time holds both.

// settleDuet decides, before anything changes, whether the comparison
// is a duet: with Duet, unless the lab spans hosts or hands devices of
// the host to nodes (a twin would need a second set), or the runs are
// searches (two searches at once would not keep in step). With DuetAuto
// such a lab is measured in sequential pairs instead, and the progress
// says why; without, it is refused.
func (req *Request) settleDuet() error {
	if !req.Duet {
		return nil
	}
	err := req.duetRefusal()
	if err != nil && req.DuetAuto {
		why := err.Error()
		if fe, ok := errors.AsType[*FieldError](err); ok {
			why = fe.Err.Error()
		}
		req.progress("variants measured in sequential pairs, not as a duet: %s\n", why)
		req.Duet, req.replaced = false, "not a duet: "+why
		return nil
	}
	if err != nil && req.fullLoad() {
		return fmt.Errorf("%w; give the traffic a rate the routers hold (the figure is then their cost per packet), or measure in sequential pairs (duet off)", err)
	}
	return err
}

// fullLoad reports whether the traffic has no rate.
func (req *Request) fullLoad() bool {
	return req.Traffic != nil && req.Traffic.TCP == nil && req.Traffic.RatePPS == 0 && req.Traffic.RateMbps == 0
}

// twinControl gives the duet's twin the positive control variant the
// lab has (the twin is the file parsed anew, without it).
func (req *Request) twinControl(twin *spec.Lab) error {
	if req.controlName == "" {
		return nil
	}
	_, err := compare.AddControl(twin, req.controlBase, req.controlName, req.controlRules())
	return err
}

// FileVariant is a variant made of another version of the lab's file (a
// baseline's copy of the file it measured; see spec.VariantFrom).
type FileVariant struct {
	Name, Path string
	Text       []byte
}

// addTo adds the variant to lab l, the lab or its duet's twin (the
// other version renamed as l is), unless l has it. A nil f adds none.
func (f *FileVariant) addTo(l *spec.Lab) error {
	if f == nil || l.Variant(f.Name) != nil {
		return nil
	}
	v, err := spec.VariantFrom(l, f.Path, labname.Rename(f.Text, l.Name), f.Name)
	if err != nil {
		return err
	}
	if v == nil {
		return fmt.Errorf("%s differs from lab %s in nothing a bench measures: no variant to compare", f.Path, l.Name)
	}
	l.Variants = append(l.Variants, v)
	return nil
}

// duetRefusal says why the request cannot be a duet.
func (req *Request) duetRefusal() error {
	switch {
	case len(req.Lab.Hosts) > 0 || len(req.Lab.SRIOV) > 0:
		return &FieldError{"duet", fmt.Errorf("lab %s spans hosts or hands SR-IOV devices to nodes: its twin would need a second set of them", req.Lab.Name)}
	case req.Search != nil || req.MLR != nil || req.RFC2544 != nil || len(req.LatencyAt) > 0:
		return &FieldError{"duet", errors.New("a duet measures runs, not searches: two searches at once would not keep in step")}
	case req.Traffic != nil && req.Traffic.TCP != nil:
		return &FieldError{"duet", errors.New("a TCP run's flows take what CPU they can: two labs' flows at once would share the CPUs unevenly, not alike")}
	case req.fullLoad() && compare.ShareBacklog(compare.PlacedCPUs(req.Lab), compare.PlacedCPUs(req.Lab)): // the twin keeps the lab's placement
		return &FieldError{"duet", errors.New(compare.FullLoadDuet(compare.PlacedCPUs(req.Lab)))}
	}
	return req.sameScheduling()
}

// sameScheduling refuses variants whose receive work runs in different
// kinds of context. In a duet the twins share the CPUs; a router whose
// NAPI is threaded works in a kthread, which the other twin's softirq
// work preempts whenever it is raised, so the threaded one gets what the
// other leaves: measured here, an XDP router in a napi kthread against
// the stack's RPS softirq came out 47% slower in a duet and 48% faster in
// sequential pairs.
func (req *Request) sameScheduling() error {
	if len(req.Variants) < 2 {
		return nil
	}
	first := compare.ThreadedReceive(req.variantLab(req.Variants[0]))
	for _, name := range req.Variants[1:] {
		if other := compare.ThreadedReceive(req.variantLab(name)); other != first {
			return &FieldError{"duet", fmt.Errorf("variants %s and %s run receive work in napi kthreads on different nodes (%s against %s): in a duet a kthread gets only what the other twin's softirq work leaves of a CPU, so the two would not share the CPUs alike",
				req.Variants[0], name, compare.OrNone(first), compare.OrNone(other))}
		}
	}
	return nil
}

// variantLab is the lab as variant name has it (base: as deployed).
func (req *Request) variantLab(name string) *spec.Lab {
	if v := req.Lab.Variant(name); v != nil && v.Lab != nil {
		return v.Lab
	}
	return req.Lab
}

// LeftTwin is the name of the duet twin of deployed lab name that is
// deployed too (a duet killed before it destroyed it), "" when there is
// none. A lab of the twin's name deployed from another file is not one.
func LeftTwin(m *lab.Manager, name string) string {
	st, err := m.Recorded(name)
	if err != nil {
		return ""
	}
	twin := compare.TwinName(name)
	tst, err := m.Recorded(twin)
	if err != nil || tst.Source != string(labname.Rename([]byte(st.Source), twin)) {
		return ""
	}
	return twin
}

// deployTwin deploys the twin of the lab (the same file, another name
// and namespace prefix, the same placement) and opens it; the returned
// function destroys it.
func (req Request) deployTwin(ctx context.Context, m *lab.Manager) (*spec.Lab, *lab.Running, func() error, error) {
	twin, err := compare.TwinOf(req.Lab)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := req.twinControl(twin); err != nil {
		return nil, nil, nil, err
	}
	if err := req.FileVariant.addTo(twin); err != nil {
		return nil, nil, nil, err
	}
	if left := LeftTwin(m, req.Lab.Name); left != "" {
		req.progress("destroying %s, the twin a duet that was stopped left deployed\n", left)
		if _, err := m.Destroy(left); err != nil {
			return nil, nil, nil, fmt.Errorf("destroy the twin a stopped duet left, %s: %w", left, err)
		}
	}
	if _, err := m.Deploy(ctx, twin); err != nil {
		return nil, nil, nil, fmt.Errorf("deploy the duet's twin lab %s: %w", twin.Name, err)
	}
	destroy := func() error {
		if _, err := m.Destroy(twin.Name); err != nil {
			return fmt.Errorf("destroy the duet's twin lab %s: %w", twin.Name, err)
		}
		return nil
	}
	req.progress("deployed %s, the twin of lab %s, for the duet\n", twin.Name, req.Lab.Name)
	r, err := m.Open(twin)
	if err != nil {
		return nil, nil, nil, errors.Join(err, destroy())
	}
	if err := awaitRouting(ctx, r, req.Wait, req.Progress); err != nil {
		r.Close()
		return nil, nil, nil, errors.Join(err, destroy())
	}
	return twin, r, destroy, nil
}

// duetLab is one of the two labs of a duet.
type duetLab struct {
	lab *spec.Lab
	run *lab.Running
}

// eachVariantDuet is eachVariant's duet: every block measures the first
// variant A at once with each other variant B in turn (in a random
// order), A in one twin and B in the other (drawn at random), and looks
// at the plan's pair counts as eachVariant does.
func (req Request) eachVariantDuet(ctx context.Context, m *lab.Manager, r *lab.Running, out *Outcome) (err error) {
	twin, tr, destroy, err := req.deployTwin(ctx, m)
	if err != nil {
		return err
	}
	labs := [2]duetLab{{req.Lab, r}, {twin, tr}}
	defer func() {
		tr.Close()
		err = errors.Join(err, destroy())
	}()
	defer func() {
		if uerr := m.ApplyVariant(context.WithoutCancel(ctx), req.Lab, spec.BaseVariant); uerr != nil {
			err = errors.Join(err, fmt.Errorf("give the lab back as deployed: %w", uerr))
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	err = req.inBlocks(out, func(run string, n int, files map[string]*report.ResultsFile) error {
		for _, j := range rng.Perm(len(req.Variants) - 1) {
			order := [2]string{req.Variants[0], req.Variants[j+1]}
			if rng.IntN(2) == 1 {
				order[0], order[1] = order[1], order[0]
			}
			req.progress("block %d (pairs so far %d): %s in %s, %s in %s, at once\n", n, n-1, order[0], labs[0].lab.Name, order[1], labs[1].lab.Name)
			if err := req.duetBlock(ctx, m, labs, order, fmt.Sprintf("%s/%d.%d", run, n, j), files, out); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range out.Comparisons {
		c.Method = "duet (A and B measured at once in twin labs, which holds which drawn at random per block); " + c.Method
		if c.Decision != nil {
			c.Decision.Method = "duet, " + c.Decision.Method
		}
	}
	return nil
}

// duetBlock applies order[i] to labs[i], and measures every frame size
// in both labs at once.
func (req Request) duetBlock(ctx context.Context, m *lab.Manager, labs [2]duetLab, order [2]string, block string, files map[string]*report.ResultsFile, out *Outcome) error {
	var benches [2]*Bench
	defer func() {
		for _, b := range benches {
			if b != nil {
				b.Close()
			}
		}
	}()
	gate := newGate(2)
	for i, dl := range labs {
		if err := m.ApplyVariant(ctx, dl.lab, order[i]); err != nil {
			return err
		}
		o := req.Options
		o.Variant, o.Block, o.Gate, o.Duet = order[i], block, gate.wait, true
		if i == 1 { // one live stream: the lab's own
			o.Live, o.Stream = nil, nil
		}
		// The run as the command line made it: the twin's nodes have the
		// lab's names, so one traffic run fits both.
		b, err := New(dl.run.As(dl.lab.Variant(order[i]).Lab), req.Traffic, o)
		if err != nil {
			return fmt.Errorf("variant %s in %s: %w", order[i], dl.lab.Name, err)
		}
		benches[i] = b
	}
	for _, frame := range req.Traffic.Frames {
		var reps [2]*report.Report
		var errs [2]error
		var wg sync.WaitGroup
		for i := range benches {
			wg.Go(func() {
				if reps[i], errs[i] = benches[i].Run(ctx, frame); errs[i] != nil {
					gate.release() // the other engine must not wait for this one
				}
			})
		}
		wg.Wait()
		gate.reset()
		if err := errors.Join(errs[0], errs[1]); err != nil {
			return err
		}
		// The twin is the lab's file under another name: its results are
		// the file's, as compare and the environment checks see them.
		reps[1].Env.LabHash = reps[0].Env.LabHash
		for i, rep := range reps {
			out.Reports = append(out.Reports, rep)
			if err := req.record(rep); err != nil {
				return err
			}
			line, err := json.Marshal(rep)
			if err != nil {
				return err
			}
			if err := files[order[i]].AddLine(line); err != nil {
				return fmt.Errorf("variant %s: %w", order[i], err)
			}
		}
	}
	return nil
}

// gate holds each of n goroutines at wait until all n have come, so that
// the duet's two engines start together.
type gate struct {
	mu      sync.Mutex
	n, came int
	open    chan struct{}
}

func newGate(n int) *gate { return &gate{n: n, open: make(chan struct{})} }

func (g *gate) wait() {
	g.mu.Lock()
	g.came++
	if g.came == g.n {
		close(g.open)
	}
	ch := g.open
	g.mu.Unlock()
	<-ch
}

// release opens the gate whoever has come.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.came < g.n {
		g.came = g.n
		close(g.open)
	}
}

// reset makes the gate ready for the next run.
func (g *gate) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.came >= g.n {
		g.came, g.open = 0, make(chan struct{})
	}
}
