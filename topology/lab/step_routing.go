package lab

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/spec"
)

// Routing daemons in nodes (frr:, bird:), started in the node's view after
// its addresses, routes and exec: lines, before its run: services. FRR's
// daemons start as Debian's frrcommon.sh starts each (DAEMON -d with the
// options of /etc/frr/daemons; each reads its own /etc/frr/DAEMON.conf
// where files: gives one), then `vtysh -b` loads the integrated
// frr.conf into them. Every configuration file is first read as vtysh
// reads it (--dryrun): a line FRR refuses is a warning naming the file
// and line, and the daemons run without it, as FRR's own start does
// (Manager.Strict makes it an error). BIRD starts as `bird -c bird.conf -s CTL`. The deploy
// waits until vtysh (birdc) answers. Each daemon carries the lab's service
// mark (see step_service.go), so destroy stops it like a service, also
// after a deploy killed before it could record anything.

// frrBin is where Debian's frr package keeps the daemons.
const frrBin = "/usr/lib/frr"

// routingWait bounds the wait for a daemon to answer its control socket.
const routingWait = 20 * time.Second

func routingSteps(l *spec.Lab, _ string) []Step {
	var steps []Step
	for _, n := range l.Nodes {
		if n.FRR != nil {
			daemons := deployed.FRRDaemons(n.FRR)
			steps = append(steps, Step{
				Name:   fmt.Sprintf("start FRR in %s (%s), load frr.conf, wait for vtysh", n.Name, strings.Join(daemons, ", ")),
				Shell:  func() []string { return shFRR(l, n, daemons) },
				Do:     func(d *deployer) error { return d.startFRR(n, daemons) },
				Key:    fmt.Sprintf("frr %s %s\n%s", n.Name, strings.Join(daemons, " "), routingConfig(n, spec.FRRConfPath)),
				Makes:  []string{n.Name + "/frr " + strings.Join(daemons, " ")},
				Needs:  nodeProcessNeeds(n.Name),
				Undo:   func(d *deployer) error { return d.stopTagged(n.Name, l.Name+"/"+n.Name+"/frr", -1) },
				Reload: reloadFRR(n),
			})
		}
		if n.BIRD != nil {
			steps = append(steps, Step{
				Name:   fmt.Sprintf("start BIRD in %s, wait for birdc", n.Name),
				Shell:  func() []string { return shBIRD(l, n) },
				Do:     func(d *deployer) error { return d.startBIRD(n) },
				Key:    fmt.Sprintf("bird %s\n%s", n.Name, routingConfig(n, spec.BIRDConfPath)),
				Makes:  []string{n.Name + "/bird"},
				Needs:  nodeProcessNeeds(n.Name),
				Undo:   func(d *deployer) error { return d.stopTagged(n.Name, l.Name+"/"+n.Name+"/bird", -1) },
				Reload: reloadBIRD(n),
			})
		}
	}
	return steps
}

// frrArgs is a daemon's command line, as frrcommon.sh builds it from
// /etc/frr/daemons (frrDaemonsFile).
func frrArgs(daemon string) []string {
	args := []string{filepath.Join(frrBin, daemon), "-d", "-F", "traditional", "-A", "127.0.0.1"}
	switch {
	case daemon == "zebra":
		args = append(args, "-s", "90000000")
	case strings.HasSuffix(daemon, "6d") || daemon == "ripngd":
		args[len(args)-1] = "::1"
	}
	return args
}

// startFRR starts node n's FRR daemons and loads frr.conf, zebra's part
// first (see frr_routerid.go), and waits for vtysh to answer for every
// daemon.
func (d *deployer) startFRR(n *spec.Node, daemons []string) error {
	refused, err := d.frrRefused(n)
	if err != nil {
		return err
	}
	if len(refused) > 0 {
		if d.m.Strict {
			return fmt.Errorf("FRR in %s refuses %d line(s) of its configuration (a strict deploy stops here):\n  %s", n.Name, len(refused), strings.Join(refused, "\n  "))
		}
		for _, r := range refused {
			d.warn("FRR in %s refused %s; the daemons run without it, as FRR does when it starts", n.Name, r)
		}
	}
	if err := d.recordDaemons(n, "frr", strings.Join(daemons, " ")); err != nil {
		return err
	}
	tag := d.lab.Name + "/" + n.Name + "/frr"
	base, protocols := daemons[:2], daemons[2:]
	if err := d.startDaemons(n, tag, base); err != nil {
		return err
	}
	if len(protocols) > 0 {
		if err := d.waitConnected(n, tag, zebraAddresses(n)); err != nil {
			return err
		}
		if err := d.startDaemons(n, tag, protocols); err != nil {
			return err
		}
	}
	return d.waitAnswer(n, func() error {
		out, err := d.runInNode(n, tag, "vtysh", "-c", "show daemons")
		if err != nil {
			return fmt.Errorf("vtysh: %w: %s", err, strings.TrimSpace(string(out)))
		}
		for _, dm := range daemons {
			if !bytes.Contains(out, []byte(dm)) {
				return fmt.Errorf("vtysh does not reach %s (show daemons: %s)", dm, strings.TrimSpace(string(out)))
			}
		}
		return nil
	})
}

// startDaemons starts FRR daemons of node n and has vtysh -b load frr.conf
// into those running (per-daemon files, FRR's topotests', are read by
// each daemon as it starts).
func (d *deployer) startDaemons(n *spec.Node, tag string, daemons []string) error {
	for _, dm := range daemons {
		if out, err := d.runInNode(n, tag, frrArgs(dm)...); err != nil {
			return fmt.Errorf("start %s in %s: %w%s", dm, n.Name, err, d.frrLog(n, out))
		}
	}
	if n.FRR.Config != "" || n.FileAt(spec.FRRConfPath) != nil {
		// vtysh -b goes on past a line a daemon refuses, and fails at the
		// end: refused lines alone (frrRefused found them, and warned)
		// are no failure unless the deploy is strict.
		if out, err := d.runInNode(n, tag, "vtysh", "-b"); err != nil && (d.m.Strict || !onlyRefusedLines(out)) {
			return fmt.Errorf("FRR in %s refused its frr.conf (vtysh -b: %w)%s", n.Name, err, d.frrLog(n, out))
		}
	}
	return nil
}

// refusedLine is vtysh's report of a configuration line it refused:
// "line 12: % Unknown command[4]: reistribute bgp".
var refusedLine = regexp.MustCompile(`(?m)^line (\d+): (% [^\[:]+)(?:\[\d+\])?: *(.*)$`)

// processingFailure is the line vtysh -b ends with when it refused a
// line of a file: "Configuration file[/etc/frr/frr.conf] processing
// failure: 2".
var processingFailure = regexp.MustCompile(`(?m)^Configuration file\[[^\]]*\] processing failure: \d+$`)

// onlyRefusedLines reports whether vtysh's output says nothing but the
// lines it refused (and that it refused some).
func onlyRefusedLines(out []byte) bool {
	rest := processingFailure.ReplaceAll(refusedLine.ReplaceAll(out, nil), nil)
	return len(refusedLine.FindAll(out, -1)) > 0 && len(bytes.TrimSpace(rest)) == 0
}

// frrRefused checks node n's FRR configuration files as FRR's vtysh reads
// them (vtysh --dryrun, in the node's view, before any daemon runs) and
// returns each line refused, with its file and line and, where the file
// came from another, that one's: "line 12 of /etc/frr/bgpd.conf
// (r1/etc/zebra/bgpd.conf:12): % Unknown command: reistribute bgp".
func (d *deployer) frrRefused(n *spec.Node) ([]string, error) {
	var paths []string
	if n.FRR.Config != "" || n.FileAt(spec.FRRConfPath) != nil {
		paths = append(paths, spec.FRRConfPath)
	}
	for _, dm := range append([]string{"zebra", "staticd"}, spec.FRRDaemons...) {
		if p := "/etc/frr/" + dm + ".conf"; n.FileAt(p) != nil {
			paths = append(paths, p)
		}
	}
	var refused []string
	for _, p := range paths {
		out, err := d.runInNode(n, "", "vtysh", "--dryrun", "-f", p)
		found := refusedLine.FindAllSubmatch(out, -1)
		if err != nil && len(found) == 0 {
			return nil, fmt.Errorf("check %s in %s (vtysh --dryrun: %w): %s", p, n.Name, err, strings.TrimSpace(string(out)))
		}
		from := ""
		if f := n.FileAt(p); f != nil && f.From != "" {
			from = f.From
		}
		// The lines nslab wrote first (frr: {quagga: true}) are not the
		// file's: its line numbers count from after them.
		head := strings.Count(n.FRRHead(p), "\n")
		for _, m := range found {
			line, _ := strconv.Atoi(string(m[1]))
			if line > head {
				line -= head
			}
			where := fmt.Sprintf("line %d of %s", line, p)
			if from != "" {
				where += fmt.Sprintf(" (%s:%d)", from, line)
			}
			refused = append(refused, fmt.Sprintf("%s: %s: %s", where, m[2], strings.TrimSpace(string(m[3]))))
		}
	}
	return refused, nil
}

// frrLog is what a failed FRR start shows: the command's output and the
// last lines of the node's FRR log, where frr.conf sends it.
func (d *deployer) frrLog(n *spec.Node, out []byte) string {
	s := ""
	if t := strings.TrimSpace(string(out)); t != "" {
		s = ":\n  " + strings.ReplaceAll(t, "\n", "\n  ")
	}
	if tail, err := d.runInNode(n, "", "tail", "-n", "5", "/var/log/frr/frr.log"); err == nil && len(bytes.TrimSpace(tail)) > 0 {
		s += "\n  its log (/var/log/frr/frr.log in " + n.Name + "):\n  " + strings.ReplaceAll(strings.TrimSpace(string(tail)), "\n", "\n  ")
	}
	return s
}

// startBIRD starts node n's BIRD and waits for birdc to answer.
func (d *deployer) startBIRD(n *spec.Node) error {
	if err := d.recordDaemons(n, "bird", "bird"); err != nil {
		return err
	}
	tag := d.lab.Name + "/" + n.Name + "/bird"
	if out, err := d.runInNode(n, tag, "bird", "-c", spec.BIRDConfPath, "-s", deployed.BIRDCtl, "-P", "/run/bird/bird.pid"); err != nil {
		return fmt.Errorf("BIRD in %s refused to start (%w): %s", n.Name, err, strings.TrimSpace(string(out)))
	}
	return d.waitAnswer(n, func() error {
		out, err := d.runInNode(n, tag, "birdc", "-s", deployed.BIRDCtl, "show", "status")
		if err != nil || !bytes.Contains(out, []byte("Daemon is up")) {
			return fmt.Errorf("birdc: %v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	})
}

// recordDaemons records a node's daemons as a service (no pid: they
// daemonize; destroy finds them by their mark) before they start.
func (d *deployer) recordDaemons(n *spec.Node, kind, what string) error {
	log := logPath(d.m.stateDir(), d.lab.Name, n.Name, kind, 0)
	d.st.Services = append(d.st.Services, state.ServiceRecord{Node: n.Name, Index: -1, Command: kind + ": " + what, Log: log})
	return d.m.saveState(d.st)
}

// waitAnswer polls answer until it succeeds, routingWait passes or the
// deploy is cancelled.
func (d *deployer) waitAnswer(n *spec.Node, answer func() error) error {
	deadline := time.Now().Add(routingWait)
	for {
		err := answer()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no answer within %v: %w", n.Name, routingWait, err)
		}
		select {
		case <-d.ctx.Done():
			return d.ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runInNode runs argv in node n (its namespace, view and cgroup) to its
// end, with the service mark tag ("": none), and returns its output.
func (d *deployer) runInNode(n *spec.Node, tag string, argv ...string) ([]byte, error) {
	cmd, buf := deployed.Command(tag, argv)
	if err := d.startIn(n, cmd); err != nil {
		return nil, err
	}
	return deployed.Wait(d.ctx, cmd, buf, argv[0])
}

// shFRR is startFRR as shell lines.
func shFRR(l *spec.Lab, n *spec.Node, daemons []string) []string {
	in := fmt.Sprintf("nsenter --net=/run/netns/%s --mount=%s --uts=%s", l.Namespace(n.Name), viewFile(l, n, "mnt"), viewFile(l, n, "uts"))
	start := func(daemons []string) []string {
		var out []string
		for _, dm := range daemons {
			out = append(out, fmt.Sprintf("%s=%s/%s %s %s", deployed.ServiceEnv, l.Name, n.Name, in, strings.Join(frrArgs(dm), " ")))
		}
		if n.FRR.Config != "" || n.FileAt(spec.FRRConfPath) != nil {
			out = append(out, in+" vtysh -b")
		}
		return out
	}
	out := start(daemons[:2])
	if len(daemons) > 2 {
		out = append(append(out, shWaitConnected(in, zebraAddresses(n))...), start(daemons[2:])...)
	}
	return append(out, fmt.Sprintf("until %s vtysh -c 'show daemons' >/dev/null 2>&1; do sleep 0.1; done", in))
}

// shBIRD is startBIRD as shell lines.
func shBIRD(l *spec.Lab, n *spec.Node) []string {
	in := fmt.Sprintf("nsenter --net=/run/netns/%s --mount=%s --uts=%s", l.Namespace(n.Name), viewFile(l, n, "mnt"), viewFile(l, n, "uts"))
	return []string{
		fmt.Sprintf("%s=%s/%s %s bird -c %s -s %s -P /run/bird/bird.pid", deployed.ServiceEnv, l.Name, n.Name, in, spec.BIRDConfPath, deployed.BIRDCtl),
		fmt.Sprintf("until %s birdc -s %s show status >/dev/null 2>&1; do sleep 0.1; done", in, deployed.BIRDCtl),
	}
}

// viewFile is the file holding node n's view namespace of kind (mnt, uts),
// under the default state directory (as the scripts name it).
func viewFile(l *spec.Lab, n *spec.Node, kind string) string {
	return filepath.Join(DefaultStateDir, "views", l.Name, l.Namespace(n.Name)+"."+kind)
}
