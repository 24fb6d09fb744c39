package lab

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/spec"
)

// A routing daemon's new configuration, applied without a restart (its
// sessions and routes stay): the file is written in the node's view, then
// FRR takes it with frr-reload.py (which changes the running
// configuration by the difference, as FRR's documentation says to) and
// BIRD with birdc configure.

// frrReload is FRR's reload script (Debian's frr package).
const frrReload = frrBin + "/frr-reload.py"

// routingConfig is the text of node n's routing configuration at path
// (frr.conf or bird.conf): frr: or bird: config:, or files:.
func routingConfig(n *spec.Node, path string) string {
	if f := n.FileAt(path); f != nil {
		return f.Text
	}
	switch {
	case path == spec.FRRConfPath && n.FRR != nil:
		return n.FRR.Config
	case path == spec.BIRDConfPath && n.BIRD != nil:
		return n.BIRD.Config
	}
	return ""
}

// reloadFRR is the reload of node n's FRR: nil where FRR has no frr.conf
// to reload (the daemons read their own files: only a restart reads
// them again).
func reloadFRR(n *spec.Node) *Step {
	if routingConfig(n, spec.FRRConfPath) == "" {
		return nil
	}
	return reloadStep(n, "FRR", "frr.conf", func(d *deployer) error { return d.reloadFRR(n) })
}

// reloadBIRD is the reload of node n's BIRD.
func reloadBIRD(n *spec.Node) *Step {
	return reloadStep(n, "BIRD", "bird.conf", func(d *deployer) error { return d.reloadBIRD(n) })
}

// reloadStep is the step that has daemon in node n take its new file.
func reloadStep(n *spec.Node, daemon, file string, do func(*deployer) error) *Step {
	return &Step{
		Name:  fmt.Sprintf("reload %s in %s with its new %s", daemon, n.Name, file),
		Shell: func() []string { return reloadShell(file) },
		Do:    do,
	}
}

// reloadFRR writes n's frr.conf in its view and has FRR take it.
//
// Equivalent to: nsenter ... /usr/lib/frr/frr-reload.py --reload /etc/frr/frr.conf
func (d *deployer) reloadFRR(n *spec.Node) error {
	uid, gid := ids("frr")
	if err := d.writeInView(n.Name, spec.FRRConfPath, routingConfig(n, spec.FRRConfPath), uid, gid); err != nil {
		return err
	}
	out, err := d.runInNode(n, d.lab.Name+"/"+n.Name+"/frr", "python3", frrReload, "--reload", spec.FRRConfPath)
	if err != nil {
		return fmt.Errorf("FRR in %s refused its new frr.conf (frr-reload.py: %w)%s", n.Name, err, d.frrLog(n, out))
	}
	return nil
}

// reloadBIRD writes n's bird.conf in its view and has BIRD take it.
//
// Equivalent to: nsenter ... birdc -s /run/bird/bird.ctl configure
func (d *deployer) reloadBIRD(n *spec.Node) error {
	uid, gid := ids("bird")
	if err := d.writeInView(n.Name, spec.BIRDConfPath, routingConfig(n, spec.BIRDConfPath), uid, gid); err != nil {
		return err
	}
	out, err := d.runInNode(n, "", "birdc", "-s", deployed.BIRDCtl, "configure")
	if err != nil || !bytes.Contains(out, []byte("Reconfigur")) {
		return fmt.Errorf("BIRD in %s refused its new bird.conf (birdc configure: %v): %s", n.Name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// writeInView writes text at path of node's own tree (its view), owned by
// uid:gid, mode 0640 as deploy writes the daemons' files.
func (d *deployer) writeInView(node, path, text string, uid, gid int) error {
	v, err := d.m.openView(d.lab.Name, d.lab.Namespace(node))
	if err != nil || v == nil {
		return fmt.Errorf("the view of %s: %w", node, err)
	}
	defer v.Close()
	return v.Do(func() error {
		tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".nslab")
		if err := os.WriteFile(tmp, []byte(text), 0o640); err != nil {
			return fmt.Errorf("write %s in %s: %w", path, node, err)
		}
		if err := os.Chown(tmp, uid, gid); err != nil {
			return fmt.Errorf("own %s in %s: %w", path, node, err)
		}
		return os.Rename(tmp, path)
	})
}

// reloadShell is a reload as shell lines.
func reloadShell(file string) []string {
	if file == "bird.conf" {
		return []string{"# write the new bird.conf in the node's view, then:", "birdc -s " + deployed.BIRDCtl + " configure"}
	}
	return []string{"# write the new frr.conf in the node's view, then:", "python3 " + frrReload + " --reload " + spec.FRRConfPath}
}
