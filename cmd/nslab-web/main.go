// Command nslab-web serves nslab web's live page of a lab (with its
// /metrics) or nslab metrics' /metrics alone. nslab web and nslab metrics
// check their arguments and then run it in their place (exec: the same
// process, which Ctrl-C and SIGTERM reach); it is a program of its own
// because the Prometheus client library it links costs about 6 ms at
// every start of a program that links it, which every nslab command would
// otherwise pay.
//
//	nslab-web -listen ADDR [-state-dir DIR] [-netns-dir DIR] -lab LAB [-interval D]
//	nslab-web -listen ADDR [-state-dir DIR] [-netns-dir DIR] -metrics [LAB...]
//	nslab-web -listen ADDR -feed FILE [-interval D] < VIEWS
//
// With -feed, the page is of the lab in FILE, one that spans hosts, and
// its views are read from standard input, one JSON message per line:
// nslab web FILE on the lab's coordinator runs it so, feeding it the
// views it joins from every host's agent.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nslab/nslab/pktgen/web"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

func main() {
	listen := flag.String("listen", "", "ADDRESS:PORT to serve on")
	name := flag.String("lab", "", "the lab whose page to serve")
	onlyMetrics := flag.Bool("metrics", false, "serve /metrics alone, of the labs given as operands (none: every deployed lab)")
	once := flag.Bool("once", false, "with -metrics: write the metrics once, in Prometheus's text format, to standard output, and exit")
	interval := flag.Duration("interval", time.Second, "sampling interval of the page")
	feed := flag.String("feed", "", "serve the page of the lab in this FILE, its views read from standard input (run by nslab web FILE for a lab over hosts)")
	m := &lab.Manager{}
	flag.StringVar(&m.StateDir, "state-dir", "", "nslab's state directory (default /run/nslab)")
	flag.StringVar(&m.NetnsDir, "netns-dir", "", "the named namespaces' directory (default /run/netns)")
	flag.Parse()
	if (*listen == "") != (*once && *onlyMetrics) || (*name == "") == !*onlyMetrics && *feed == "" || *feed != "" && (*name != "" || *onlyMetrics) {
		fmt.Fprintln(os.Stderr, "usage: nslab-web -listen ADDR (-lab LAB [-interval D] | -metrics [LAB...] | -feed FILE [-interval D]), or -metrics -once [LAB...] (run by nslab web and nslab metrics)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case *feed != "":
		err = serveFed(ctx, *feed, *listen, *interval)
	case *once:
		err = web.WriteMetrics(m, flag.Args(), os.Stdout)
	case *onlyMetrics:
		err = web.ServeMetrics(ctx, m, flag.Args(), *listen, os.Stderr)
	default:
		err = web.ServePage(ctx, m, *name, *listen, *interval, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nslab:", err)
		os.Exit(1)
	}
}

// serveFed serves the page of the lab in file with the views read from
// standard input.
func serveFed(ctx context.Context, file, listen string, interval time.Duration) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	l, err := spec.Parse(file, data)
	if err != nil {
		return err
	}
	return web.ServeFed(ctx, l, listen, interval, os.Stdin, os.Stderr)
}
