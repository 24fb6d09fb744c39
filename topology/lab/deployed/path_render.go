package deployed

// What path prints: a traced path as a table.

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/nslab/nslab/topology/spec"
)

// WriteTable writes the path as path prints it: one row per node crossed,
// the NAT rewrites on the way, and how the path was confirmed.
func (tp *TracedPath) WriteTable(w io.Writer, l *spec.Lab) {
	how := "from the file (the lab is not deployed)"
	if tp.NotAsked != "" {
		how = "from the file (" + tp.NotAsked + ")"
	}
	if tp.Deployed {
		how = "by the kernels' addresses and routes; the kernel's route lookup agrees at every hop"
		if tp.Elsewhere != "" {
			how = "by the kernels' addresses and routes; the kernel's route lookup agrees at every hop on this host; " + tp.Elsewhere + " by the file (run nslab path there to ask its kernel)"
		}
	}
	if len(tp.Disagreements) > 0 {
		how = "by the kernels' addresses and routes, but the kernel's own route lookup disagrees: " + strings.Join(tp.Disagreements, "; ")
	}
	src := ""
	if tp.Source.IsValid() {
		src = ", source " + tp.Source.String()
	}
	fmt.Fprintf(w, "%s -> %s (%s)%s: %s\n\n", tp.From, tp.To, tp.Dest, src, how)
	if tp.Local {
		fmt.Fprintf(w, "%s holds %s itself: delivered locally, no wire crossed\n", tp.From.Node, tp.To)
		tp.writeDifferences(w)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tIN\tOUT\tNEXT HOP\tNEXT-HOP MAC")
	dst := tp.To
	for _, h := range tp.Hops {
		in, out := orDash(h.In), orDash(h.Out)
		if h.DNAT.IsValid() {
			dst = h.DNAT.Addr()
		}
		switch {
		case h.L2:
			fmt.Fprintf(tw, "%s\t%s\t%s\tbridged (switch)\t\n", h.Node, in, out)
		case h.Out == "":
			fmt.Fprintf(tw, "%s\t%s\t%s\tdelivered (holds %s)\t\n", h.Node, in, out, dst)
		default:
			kind := "on-link"
			if h.Gateway {
				kind = "gateway"
			}
			mac := "(set by the NIC)"
			if h.NextMAC != nil {
				mac = h.NextMAC.String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s (%s)\n", h.Node, in, out, h.Via, kind, mac, h.Next)
		}
	}
	tw.Flush()
	printRewrites(w, l, tp)
	routers := 0
	for _, h := range tp.Hops[1:] {
		if h.Out != "" && !h.L2 {
			routers++
		}
	}
	fmt.Fprintf(w, "\n%d IP hop(s) through %d router(s); the sender's frames carry destination MAC %s\n", routers+1, routers, macOr(tp, 0))
	tp.writeDifferences(w)
}

// writeDifferences says where the kernels on the path differ from the
// file: the path above is the kernels'.
func (tp *TracedPath) writeDifferences(w io.Writer) {
	if len(tp.Differences) == 0 {
		return
	}
	fmt.Fprintf(w, "\nthe kernels on the path differ from the file (the path above is theirs):\n")
	for _, d := range tp.Differences {
		fmt.Fprintf(w, "  %s\n", d)
	}
}

// printRewrites says where NAT rewrites the packet's addresses on the way.
func printRewrites(w io.Writer, l *spec.Lab, tp *TracedPath) {
	for _, h := range tp.Hops {
		words := l.Node(h.Node).RuleWords()
		if h.DNAT.IsValid() {
			fmt.Fprintf(w, "%s rewrites the destination to %s as it arrives on %s (%s: %s)\n", h.Node, h.DNAT, h.In, h.DNATBy, words[h.DNATBy])
		}
		if h.SNAT.IsValid() {
			fmt.Fprintf(w, "%s rewrites the source to %s as it leaves by %s (%s: %s)\n", h.Node, h.SNAT, h.Out, h.SNATBy, words[h.SNATBy])
		}
	}
}

func macOr(tp *TracedPath, i int) string {
	if tp.Hops[i].NextMAC == nil {
		return "(set by the NIC)"
	}
	return tp.Hops[i].NextMAC.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
