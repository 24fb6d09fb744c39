package lab

import (
	"encoding/json"
	"testing"

	"github.com/nslab/nslab/topology/lab/state"
)

// FuzzDecodeState: any bytes in a state file give a state or a named
// problem, never a panic; a state it accepts has the version this nslab
// writes and a lab name.
func FuzzDecodeState(f *testing.F) {
	good, err := json.MarshalIndent(&state.State{Version: state.Version, Lab: "crs", Phase: state.PhaseDeployed,
		Namespaces: []state.NSRecord{{Node: "ns1", Name: "ns1", Inode: 4026532000}},
		Services:   []state.ServiceRecord{{Node: "ns1", PID: 42}}, Tunnels: []state.TunnelRecord{{Node: "ns1", VNI: 4242}}}, "", "  ")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	for _, d := range damages {
		f.Add(d.spoil(good))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, problem := state.Decode(data)
		if (st == nil) == (problem == "") {
			t.Fatalf("state %v with problem %q", st, problem)
		}
		if st != nil && (st.Version != state.Version || st.Lab == "") {
			t.Fatalf("accepted %+v", st)
		}
	})
}
