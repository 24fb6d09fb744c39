package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// undoTime bounds taking the shares back after a failed deploy.
const undoTime = 3 * time.Minute

// Deploy builds every host's share at once, once the underlay is known to
// carry every link between hosts. The parts an interrupted deploy of this
// lab left on some hosts (a coordinator killed) are removed first; a lab
// deployed on every host already is refused. If any host fails, or cannot
// be reached, the share of every host that can be is taken back.
func (c *Coordinator) Deploy(ctx context.Context) ([]Result, error) {
	if err := c.CheckMTU(ctx); err != nil {
		return nil, c.mtuRefusal(err)
	}
	c.AsDeployed = false // a deploy never takes another file's lab for its own
	present, others, err := c.present(ctx)
	if err != nil {
		return nil, err
	}
	if len(others) > 0 {
		return nil, fmt.Errorf("%s; nothing was made: give this lab another name, or remove that lab on its host first", strings.Join(others, "; "))
	}
	if len(present) == len(c.Plan.Shares) {
		return nil, fmt.Errorf("lab %s is already deployed on every host (%s): destroy it first", c.Plan.Lab, strings.Join(present, ", "))
	}
	if len(present) > 0 {
		if err := c.destroyOn(ctx, present); err != nil {
			return nil, fmt.Errorf("remove what an interrupted deploy of lab %s left: %w", c.Plan.Lab, err)
		}
	}
	args := []string{"deploy", QuietArg}
	if c.Strict {
		args = append(args, StrictArg)
	}
	res, err := c.Run(ctx, append(args, FileArg)...)
	if failed := Failed(res); err == nil && len(failed) == 0 {
		return res, nil
	} else {
		err = errors.Join(err, resultErrors("deploy", failed))
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTime)
	defer cancel()
	if uerr := c.destroyOn(uctx, c.reachable(err)); uerr != nil {
		return res, fmt.Errorf("%w\nand taking the shares back failed too:\n%w", err, uerr)
	}
	return res, fmt.Errorf("%w\nevery host's share was taken back", err)
}

// mtuRefusal is why CheckMTU's err stopped the deploy: the hosts that
// stopped answering while their underlay was probed are named as lost
// (nothing was learned of their underlay), and only when none was is the
// underlay said not to carry the links.
func (c *Coordinator) mtuRefusal(err error) error {
	var lost []string
	for _, h := range c.Plan.Hosts() {
		if Names(err, h) {
			lost = append(lost, "host "+h)
		}
	}
	if len(lost) > 0 {
		return fmt.Errorf("%s stopped answering while the underlay's MTU was probed; nothing was made:\n%w", strings.Join(lost, ", "), err)
	}
	return fmt.Errorf("the underlay does not carry the lab's links between hosts; nothing was made:\n%w", err)
}

// Destroy removes every host's share; a host without one is no error. A
// host whose lab of this name was deployed from another file is left as
// it is, and named in the error.
func (c *Coordinator) Destroy(ctx context.Context) ([]Result, error) {
	present, others, err := c.present(ctx)
	if err != nil {
		return nil, err
	}
	res, err := c.RunOn(ctx, present, "destroy", NameArg)
	err = errors.Join(err, resultErrors("destroy", Failed(res)))
	if len(others) > 0 {
		err = errors.Join(err, fmt.Errorf("%s: left as it is", strings.Join(others, "; ")))
	}
	return res, err
}

// destroyOn destroys the lab on hosts.
func (c *Coordinator) destroyOn(ctx context.Context, hosts []string) error {
	res, err := c.RunOn(ctx, hosts, "destroy", NameArg)
	return errors.Join(err, resultErrors("destroy", Failed(res)))
}

// present lists the hosts where this lab (or a part of it) is deployed:
// a lab of its name deployed from the plan's file. A lab of the same name
// deployed there from another file, or for an owner other than a person
// (a Kubernetes Lab's share), is another lab: others says so, host by
// host, and nothing here touches it.
func (c *Coordinator) present(ctx context.Context) (mine, others []string, err error) {
	res, err := c.Run(ctx, "inspect", NameArg, JSONArg)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range res {
		if r.Code != 0 {
			continue
		}
		var info struct {
			File   string `json:"file"`
			SHA256 string `json:"sha256"`
			Owner  string `json:"owner"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &info); err != nil {
			return nil, nil, &HostError{r.Host, "read what lab " + c.Plan.Lab + " is there", err}
		}
		switch {
		case info.Owner != "":
			others = append(others, fmt.Sprintf("host %s holds another lab named %s, deployed for %s", r.Host, c.Plan.Lab, info.Owner))
		case info.SHA256 != "" && info.SHA256 != c.Plan.FileSHA && !c.AsDeployed:
			others = append(others, fmt.Sprintf("host %s holds another lab named %s, deployed from %s (sha256 %s, this file's %s)", r.Host, c.Plan.Lab, info.File, short(info.SHA256), short(c.Plan.FileSHA)))
		default:
			mine = append(mine, r.Host)
		}
	}
	return mine, others, nil
}

// reachable lists the hosts that err does not name as unreachable.
func (c *Coordinator) reachable(err error) []string {
	var out []string
	for _, h := range c.Plan.Hosts() {
		if !Names(err, h) {
			out = append(out, h)
		}
	}
	return out
}

// Names reports whether err names host: a *HostError of host in it, as a
// deploy's error names a host that failed, was lost, or whose share could
// not be taken back.
func Names(err error, host string) bool {
	if he, ok := err.(*HostError); ok {
		return he.Host == host
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if Names(e, host) {
				return true
			}
		}
	}
	return false
}

// resultErrors is one error per host whose verb failed, with its words.
func resultErrors(step string, failed []Result) error {
	var errs []error
	for _, r := range failed {
		errs = append(errs, &HostError{r.Host, step, errors.New(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.Stderr), "nslab: ")))})
	}
	return errors.Join(errs...)
}
