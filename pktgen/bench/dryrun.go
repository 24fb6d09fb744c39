package bench

import (
	"fmt"
	"strings"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/walk"

	"github.com/nslab/nslab/pktgen/kernel"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// DryRun returns the kernel pktgen shell script of traffic t (one section
// per frame size), the `echo ... > /proc/net/pktgen/...` writes with the
// kernel's result checks, as a user would write it. The destination MAC is
// resolved as a run resolves it (nslab path): from the kernel when the lab
// is running (r not nil), else from the file. It changes nothing; it runs
// in the caller's namespace.
func DryRun(l *spec.Lab, r *lab.Running, t *spec.Traffic) (string, error) {
	var tp *deployed.TracedPath
	var err error
	if r != nil {
		tp, err = r.TraceFlow(t.From, t.To, t.Flow())
	} else {
		tp, err = deployed.TraceFileFlow(l, t.From, t.To, t.Flow())
	}
	if err != nil {
		return "", fmt.Errorf("traffic %s: %w", t.Name, err)
	}
	if tp.Local {
		return "", fmt.Errorf("traffic %s: %s is an address of the sender %s itself", t.Name, t.To, t.From.Node)
	}
	mac := tp.SenderMAC()
	if mac == nil {
		return "", fmt.Errorf("traffic %s: the MAC of %s (a VF) is known only once the lab is deployed", t.Name, tp.NextHop)
	}
	from := l.Node(t.From.Node).Interface(t.From.Interface)
	kind, mtu := from.Kind.String(), from.MTU
	if mtu == 0 {
		mtu = 1500
	}
	where := "from the file (the lab is not deployed)"
	if tp.Deployed {
		where = "read from the deployed lab"
	}
	var b strings.Builder
	for i, frame := range t.Frames {
		j := jobFor(t, frame, nil, mac)
		if _, set := j.Options["xmit_mode"]; from.Impair != nil && !set {
			// as a run does: through the sender's qdisc, or its impairment would not act
			j.Options = withOption(j.Options, "xmit_mode", "queue_xmit")
		}
		pj, err := kernel.JobFor(j, kind, mtu)
		if err == nil {
			err = pj.Validate()
		}
		if err != nil {
			return "", fmt.Errorf("traffic %s, frame %d: %w", t.Name, frame, err)
		}
		s := pj.Script(l.Namespace(t.From.Node))
		if i > 0 { // one file: later sections run after the first, inside the namespace already
			s = strings.TrimPrefix(s, "#!/bin/sh\n")
			b.WriteString("\n")
		}
		if i == 0 {
			s = strings.Replace(s, "\n", fmt.Sprintf("\n# the bench of lab %s, traffic %s, %s -> %s through %s;\n# destination MAC %s is %s's, %s.\n# nslab bench also holds the UDP port open at the receiver (so it answers no ICMP)\n# and samples every hop's counters; this script only sends.\n",
				l.Name, t.Name, t.From, t.To, hopsLine(tp.Path), mac, tp.NextHop, where), 1)
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

func hopsLine(p *walk.Path) string {
	var nodes []string
	for _, h := range p.Hops {
		nodes = append(nodes, h.Node)
	}
	return strings.Join(nodes, " -> ")
}
