package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/nslab/nslab/internal/loopback"
	"github.com/nslab/nslab/pktgen/watch"
	"github.com/nslab/nslab/topology/fleet"
)

// The verbs that watch a lab, from the coordinator of a lab that spans
// hosts: top prints each host's reading under its name (again every
// interval until Ctrl-C), metrics serves every host's metrics at one
// /metrics, each sample labelled with its host, and web serves the page
// of the whole lab, its views joined from every host's. Each host's part
// is read there, by its agent, as `top --once` and `metrics --once` read
// it.

// fleetTop prints every host's top reading, each taken over one interval
// at once; without --once, again until ctx ends, the screen cleared.
func fleetTop(ctx context.Context, co *fleet.Coordinator, o *fleetOptions) error {
	args := append([]string{"top", "--once"}, slices.DeleteFunc(slices.Clone(o.Args), func(a string) bool { return a == "--once" })...)
	for {
		res, err := co.Run(ctx, args...)
		if ctx.Err() != nil {
			return nil // Ctrl-C
		}
		if !o.Once {
			fmt.Fprint(o.Out, "\x1b[H\x1b[2J")
		}
		printResults(o.Out, res, false)
		if err != nil {
			return fmt.Errorf("lab %s: %w", o.Plan.Lab, err)
		}
		if f := fleet.Failed(res); len(f) > 0 {
			return fmt.Errorf("lab %s: top failed on host %s", o.Plan.Lab, f[0].Host)
		}
		if o.Once {
			return nil
		}
	}
}

// fleetMetrics serves every host's metrics at /metrics on o.Listen until
// ctx ends: at each scrape, each host's agent reads its part once.
func fleetMetrics(ctx context.Context, co *fleet.Coordinator, o *fleetOptions) error {
	if o.Once {
		text, err := gatherMetrics(ctx, co)
		fmt.Fprint(o.Out, text)
		return err
	}
	var mu sync.Mutex // one scrape at a time: an agent answers one request at a time
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		text, err := gatherMetrics(r.Context(), co)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprint(w, text)
	})
	what := fmt.Sprintf("the metrics of lab %s on hosts %s: http://%s/metrics", o.Plan.Lab, strings.Join(o.Plan.Hosts(), ", "), o.Listen)
	return loopback.Serve(ctx, o.Listen, mux, o.Err, what)
}

// gatherMetrics reads every host's metrics of the lab and joins them.
func gatherMetrics(ctx context.Context, co *fleet.Coordinator) (string, error) {
	res, err := co.Run(ctx, "metrics", "--once", fleet.FileArg)
	if err != nil {
		return "", fmt.Errorf("lab %s: %w", co.Plan.Lab, err)
	}
	if f := fleet.Failed(res); len(f) > 0 {
		return "", fmt.Errorf("lab %s: metrics failed on host %s: %s", co.Plan.Lab, f[0].Host, strings.TrimSpace(f[0].Stderr))
	}
	return mergeMetrics(res), nil
}

// mergeMetrics joins hosts' metrics in Prometheus's text format into
// one: each family's HELP and TYPE once, then its samples from every
// host, each with a host label. (Prometheus's own parser is not linked
// into nslab: its start-up cost every command; this format is lines.)
func mergeMetrics(res []fleet.Result) string {
	type family struct{ head, samples []string }
	var order []string
	fams := map[string]*family{}
	get := func(name string) *family {
		if fams[name] == nil {
			fams[name] = &family{}
			order = append(order, name)
		}
		return fams[name]
	}
	for _, r := range res {
		cur := ""
		for line := range strings.Lines(r.Stdout) {
			line = strings.TrimRight(line, "\n")
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && (f[1] == "HELP" || f[1] == "TYPE") {
				cur = f[2]
				if fam := get(cur); !slices.Contains(fam.head, line) {
					fam.head = append(fam.head, line)
				}
				continue
			}
			if line != "" && !strings.HasPrefix(line, "#") {
				get(cur).samples = append(get(cur).samples, withHost(line, r.Host))
			}
		}
	}
	var b strings.Builder
	for _, name := range order {
		for _, l := range append(fams[name].head, fams[name].samples...) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// withHost is a sample line with the label host="host" first.
func withHost(line, host string) string {
	label := `host="` + host + `"`
	i := strings.IndexAny(line, "{ ")
	switch {
	case i < 0:
		return line
	case line[i] == ' ':
		return line[:i] + "{" + label + "}" + line[i:]
	case strings.HasPrefix(line[i:], "{}"):
		return line[:i+1] + label + line[i+1:]
	}
	return line[:i+1] + label + "," + line[i+1:]
}

// fleetWeb serves the live page of the whole lab on o.Listen until ctx
// ends: nslab-web serves it (-feed, in a child process, since this one
// holds the agents' channels), and every interval each host's agent reads
// its part (top --once --format json) and the views joined are fed to it.
func fleetWeb(ctx context.Context, co *fleet.Coordinator, o *fleetOptions) error {
	helper, err := helperPath(webHelperName)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "nslab-web-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	file := filepath.Join(dir, o.Plan.Lab+".yaml")
	if err := os.WriteFile(file, o.File, 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, helper, "-listen", o.Listen, "-feed", file, "-interval", o.Interval.String())
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.Stdout, cmd.Stderr = o.Out, o.Err
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", helper, err)
	}
	served := make(chan error, 1)
	go func() { served <- cmd.Wait(); cancel() }()
	enc := json.NewEncoder(in)
	for ctx.Err() == nil {
		if m := joinedView(ctx, co, o); ctx.Err() != nil || enc.Encode(m) != nil {
			break // Ctrl-C, or the helper ended
		}
	}
	_ = in.Close()
	if err := <-served; err != nil && ctx.Err() == nil {
		return fmt.Errorf("%s: %w", webHelperName, err)
	}
	return nil
}

// webMessage is one message of nslab web's page (pktgen/web.Message,
// whose package nslab does not link).
type webMessage struct {
	Type  string      `json:"type"`
	View  *watch.View `json:"view,omitempty"`
	Error string      `json:"error,omitempty"`
}

// joinedView is the whole lab's view over one interval: each host's
// agent reads its part (top --once) at once, and the views are joined;
// or an error naming the host whose reading failed.
func joinedView(ctx context.Context, co *fleet.Coordinator, o *fleetOptions) webMessage {
	res, err := co.Run(ctx, "top", "--once", "--format", "json", "--interval", o.Interval.String(), fleet.FileArg)
	if err != nil {
		return webMessage{Type: "error", Error: err.Error()}
	}
	if f := fleet.Failed(res); len(f) > 0 {
		return webMessage{Type: "error", Error: fmt.Sprintf("host %s: %s", f[0].Host, strings.TrimSpace(f[0].Stderr))}
	}
	views := make([]watch.HostView, 0, len(res))
	for _, r := range res {
		var v watch.View
		if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
			return webMessage{Type: "error", Error: fmt.Sprintf("host %s: its reading does not parse: %v", r.Host, err)}
		}
		views = append(views, watch.HostView{Host: r.Host, View: &v})
	}
	return webMessage{Type: "view", View: watch.Join(o.Plan.Lab, views)}
}
