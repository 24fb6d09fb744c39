package agentargv

import (
	"slices"
	"testing"

	"github.com/nslab/nslab/topology/fleet"
)

// TestSpell: every stand-in of the protocol becomes nslab's flag, and
// the rest passes as it is, after the global options, --width 0 and
// --host.
func TestSpell(t *testing.T) {
	got := Spell([]string{"--state-dir", "/s"}, "b", "lab1", []string{"destroy", fleet.Owned("Kubernetes Lab ns/x (uid u)"), fleet.NameArg, fleet.QuietArg, fleet.JSONArg, fleet.RemoteArg, fleet.StrictArg, "/f.yaml"})
	want := []string{"--state-dir", "/s", "--width", "0", "--host", "b", "destroy", "--owner", "Kubernetes Lab ns/x (uid u)", "--name", "lab1", "-q", "--format", "json", "--other-hosts", "--strict", "/f.yaml"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
