package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/lab/state"
)

// TestLabNameOfRecordedFile: a file whose exact contents a lab's state
// records names that lab without being parsed (this one would not
// parse); once edited, no state records it and its name: key names it.
func TestLabNameOfRecordedFile(t *testing.T) {
	dir := t.TempDir()
	m := &lab.Manager{StateDir: dir}
	file := filepath.Join(dir, "lab.yaml")
	data := []byte("name: in-the-file\nnodes: 7\n")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	st := &state.State{Version: state.Version, Lab: "recorded", Phase: state.PhaseDeployed, SHA256: hex.EncodeToString(sum[:])}
	if err := state.Save(dir, st); err != nil {
		t.Fatal(err)
	}
	if got, _, err := labNameOf(m, file); err != nil || got != "recorded" {
		t.Errorf("the deployed file: %q %v, want the lab its state records", got, err)
	}
	if err := os.WriteFile(file, []byte("name: edited\nnodes: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _, err := labNameOf(m, file); err != nil || got != "edited" {
		t.Errorf("the edited file: %q %v, want its name: key", got, err)
	}
}
