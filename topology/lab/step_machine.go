package lab

import (
	"fmt"
	"os"
	"slices"
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

// machineChange is the step that takes the machine-wide sysctls from lab
// version from to version to (a variant's, either way).
func machineChange(from, to *spec.Lab) []Step {
	kvs := machineDiff(from.Machine, to.Machine)
	if len(kvs) == 0 {
		return nil
	}
	var words []string
	for _, s := range kvs {
		words = append(words, s.Key+"="+s.Value)
	}
	return []Step{{
		Name:  "machine-wide sysctls (given back at undo and destroy): " + strings.Join(words, ", "),
		Shell: func() []string { return []string{shMachine(kvs)} },
		Do:    func(d *deployer) error { return d.changeMachine(from.Machine, to.Machine) },
	}}
}

// machineDiff is what changes from from to to: to's keys whose value
// differs, and from's keys to lacks (their value before the lab, in words:
// the state file holds it).
func machineDiff(from, to []spec.Sysctl) []spec.Sysctl {
	var out []spec.Sysctl
	for _, s := range from {
		if _, ok := machineValue(to, s.Key); !ok {
			out = append(out, spec.Sysctl{Key: s.Key, Value: "<its value before the lab>"})
		}
	}
	for _, s := range to {
		if v, ok := machineValue(from, s.Key); !ok || v != s.Value {
			out = append(out, s)
		}
	}
	return out
}

func machineValue(kvs []spec.Sysctl, key string) (string, bool) {
	for _, s := range kvs {
		if s.Key == key {
			return s.Value, true
		}
	}
	return "", false
}

// changeMachine takes the machine-wide sysctls from from's to to's, in
// nslab's own namespace: a key only from sets gets its recorded old value
// back and its record goes; a key to sets is written, recorded first (as
// deploy does, so destroy gives it back) when no record holds it.
func (d *deployer) changeMachine(from, to []spec.Sysctl) error {
	for _, s := range from {
		if _, ok := machineValue(to, s.Key); ok {
			continue
		}
		i := slices.IndexFunc(d.st.Machine, func(r state.MachineRecord) bool { return r.Key == s.Key })
		if i < 0 {
			continue // never written by this lab
		}
		if err := restoreMachine(d.st.Machine[i : i+1]); err != nil {
			return err
		}
		d.st.Machine = slices.Delete(d.st.Machine, i, i+1)
		if err := d.m.saveState(d.st); err != nil {
			return err
		}
	}
	var fresh []spec.Sysctl
	for _, s := range to {
		if v, ok := machineValue(from, s.Key); ok && v == s.Value {
			continue
		}
		i := slices.IndexFunc(d.st.Machine, func(r state.MachineRecord) bool { return r.Key == s.Key })
		if i < 0 {
			fresh = append(fresh, s)
			continue
		}
		d.st.Machine[i].Value = s.Value
		if err := d.m.saveState(d.st); err != nil {
			return err
		}
		if err := os.WriteFile(s.ProcPath(), []byte(s.Value), 0o644); err != nil {
			return fmt.Errorf("write %s=%s: %w", s.Key, s.Value, err)
		}
	}
	return d.setMachine(fresh)
}
