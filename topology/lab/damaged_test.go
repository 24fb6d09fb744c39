package lab

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/topology/lab/deployed"
	"github.com/nslab/nslab/topology/lab/state"
)

// damages are the ways a state file can be spoiled: a full disk, a power
// cut, another program, another nslab.
var damages = []struct {
	name    string
	spoil   func(data []byte) []byte
	problem string
}{
	{"empty", func([]byte) []byte { return nil }, "it is empty"},
	{"truncated", func(b []byte) []byte { return b[:min(100, len(b)/2)] }, "not a state nslab wrote (unexpected end of JSON input)"},
	{"not JSON", func([]byte) []byte { return []byte("\x00\x00\x00garbage\n") }, "not a state nslab wrote"},
	{"other version", func(b []byte) []byte {
		return []byte(strings.Replace(string(b), `"version": 1,`, `"version": 7,`, 1))
	}, "version 7, this nslab reads version 1"},
	{"other lab", func(b []byte) []byte {
		return []byte(strings.Replace(string(b), `"lab": "`, `"lab": "x`, 1))
	}, "it is the state of lab"},
}

// TestDecodeStateDamaged: each kind of damage is named (pure).
func TestDecodeStateDamaged(t *testing.T) {
	good := []byte(`{
  "version": 1,
  "lab": "a",
  "phase": "deployed",
  "namespaces": [{"node": "n", "name": "a-n"}]
}`)
	if _, problem := state.Decode(good); problem != "" {
		t.Fatalf("good state: %s", problem)
	}
	for _, d := range damages[:4] {
		if _, problem := state.Decode(d.spoil(good)); !strings.Contains(problem, d.problem) {
			t.Errorf("%s: problem %q, want %q", d.name, problem, d.problem)
		}
	}
}

// TestPrivilegedDamagedState: for each kind of damage to the state file
// of a deployed lab with a service, inspect and deploy fail with an error
// that names the file, and destroy still removes the lab: its namespaces
// by their marker, its service by its mark, and the file itself.
func TestPrivilegedDamagedState(t *testing.T) {
	labtest.CoveredOnHost(t)
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			f := newFixture(t, serviceLab(`[]`, `["sleep 1000"]`))
			f.deploy()
			st, err := f.m.loadState(f.lab.Name)
			if err != nil {
				t.Fatal(err)
			}
			pid, start := st.Services[0].PID, st.Services[0].Start
			p := f.m.statePath(f.lab.Name)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, d.spoil(data), 0o644); err != nil {
				t.Fatal(err)
			}
			var damaged *state.DamagedStateError
			if _, err := f.m.Store().Inspect(f.lab.Name); !errors.As(err, &damaged) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), d.problem) {
				t.Fatalf("inspect: %v", err)
			}
			rep, err := f.m.Destroy(f.lab.Name)
			if err != nil {
				t.Fatalf("destroy: %v", err)
			}
			if !strings.Contains(rep.Damaged, d.problem) || len(rep.Removed) != 2 || rep.Stopped < 1 || len(rep.Unproven) == 0 {
				t.Errorf("destroy report %+v", rep)
			}
			if deployed.Alive(pid, start) {
				t.Errorf("service pid %d still runs", pid)
			}
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("damaged state file left: %v", err)
			}
			f.assertGone()
		})
	}
}
