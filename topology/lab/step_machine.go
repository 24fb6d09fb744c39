package lab

import (
	"fmt"
	"os"
	"strings"

	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/spec"
)

// Machine-wide settings (machine: {sysctls}): global net.* keys the kernel
// keeps for the whole machine. Each is recorded with its old value in the
// state file before it is written (in nslab's own namespace, the host's),
// and destroy writes the old value back. Two deployed labs may not both
// set one.

func machineSteps(l *spec.Lab, _ string) []Step {
	if len(l.Machine) == 0 {
		return nil
	}
	var words []string
	for _, s := range l.Machine {
		words = append(words, s.Key+"="+s.Value)
	}
	return []Step{{
		Name:  "machine-wide sysctls (given back at destroy): " + strings.Join(words, ", "),
		Shell: func() []string { return []string{shMachine(l.Machine)} },
		Do:    func(d *deployer) error { return d.setMachine(l.Machine) },
		Undo:  func(d *deployer) error { return restoreMachine(d.st.Machine) },
	}}
}

// shMachine is the sysctl line of setMachine (the old values are the
// script's to keep: sysctl -n KEY first).
func shMachine(kvs []spec.Sysctl) string {
	var words []string
	for _, s := range kvs {
		words = append(words, s.Key+"="+s.Value)
	}
	return "sysctl -q -w " + strings.Join(words, " ")
}

// setMachine records each machine-wide sysctl's value, then writes the
// lab's, refusing one another deployed lab set.
func (d *deployer) setMachine(kvs []spec.Sysctl) error {
	if err := d.machineFree(kvs); err != nil {
		return err
	}
	for _, s := range kvs {
		b, err := os.ReadFile(s.ProcPath())
		if err != nil {
			return fmt.Errorf("read %s: %w", s.Key, err)
		}
		d.st.Machine = append(d.st.Machine, state.MachineRecord{Key: s.Key, Was: strings.TrimSpace(string(b)), Value: s.Value})
		if err := d.m.saveState(d.st); err != nil {
			return err
		}
		if err := os.WriteFile(s.ProcPath(), []byte(s.Value), 0o644); err != nil {
			return fmt.Errorf("write %s=%s: %w", s.Key, s.Value, err)
		}
	}
	return nil
}

// machineFree refuses a key another deployed lab set (its destroy would
// give back a value this lab changed).
func (d *deployer) machineFree(kvs []spec.Sysctl) error {
	labs, err := d.m.stateLabs()
	if err != nil {
		return err
	}
	for _, name := range labs {
		if name == d.lab.Name {
			continue
		}
		st, err := d.m.loadState(name)
		if err != nil {
			continue // a damaged state is destroy's to report
		}
		for _, r := range st.Machine {
			for _, s := range kvs {
				if r.Key == s.Key {
					return fmt.Errorf("lab %s set %s=%s (it was %s): one lab at a time may set a machine-wide key; destroy %s first", name, r.Key, r.Value, r.Was, name)
				}
			}
		}
	}
	return nil
}

// restoreMachine writes back each recorded sysctl's old value, newest
// first.
func restoreMachine(recs []state.MachineRecord) error {
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if err := os.WriteFile(spec.Sysctl{Key: r.Key}.ProcPath(), []byte(r.Was), 0o644); err != nil {
			return fmt.Errorf("give %s its old value %s back: %w", r.Key, r.Was, err)
		}
	}
	return nil
}
