package lab

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nslab/nslab/topology/lab/plan"
	"github.com/nslab/nslab/topology/lab/state"
	"github.com/nslab/nslab/topology/spec"
)

// A lab is its name and its source: the SHA-256 of the file it was
// deployed from, which the state records. A verb given a FILE acts on
// the lab of FILE's name only when that lab was deployed from a file of
// exactly FILE's contents; otherwise it would measure or change another
// lab under FILE's name.

// SourceError says that the lab of a file's name is deployed here from
// another file: a verb given that file refuses it, naming the first
// differences and the two ways on.
type SourceError struct {
	Lab             string
	File, SHA256    string // the file given
	Deployed        string // the file the lab was deployed from (its path then)
	DeployedSHA256  string
	Differences     []string // the first differences, as apply would change them
	MoreDifferences int      // differences past those
	// SameLab: the two files build the same lab (the same plan, step for
	// step); their traffic, tests, variants or comments differ. A verb may
	// then act on the lab, saying so.
	SameLab          bool
	differencesError error
}

// maxDifferences is how many differences a SourceError names.
const maxDifferences = 4

func (e *SourceError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lab %s was deployed from another file: %s (sha256 %s), not %s (sha256 %s)", e.Lab, e.Deployed, short(e.DeployedSHA256), e.File, short(e.SHA256))
	switch {
	case e.differencesError != nil:
		fmt.Fprintf(&b, " (their differences could not be listed: %v)", e.differencesError)
	case e.SameLab:
		b.WriteString("; the two build the same lab (their traffic, tests, variants or comments differ)")
	default:
		fmt.Fprintf(&b, "; it differs in: %s", strings.Join(e.Differences, "; "))
		if e.MoreDifferences > 0 {
			fmt.Fprintf(&b, "; and %d more", e.MoreDifferences)
		}
	}
	return b.String()
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// Identify compares lab l (a file's, or this host's part of it) with the
// lab of its name deployed here: nil when none is deployed or it was
// deployed from a file of the same contents, a *SourceError when from
// another. It reads the state; it runs no step.
func (m *Manager) Identify(l *spec.Lab) error {
	st, err := m.Store().LoadState(l.Name)
	if _, damaged := errors.AsType[*state.DamagedStateError](err); damaged {
		return nil // nothing to compare with: the verb meets the damage itself (destroy removes it)
	}
	if err != nil || st == nil {
		return err
	}
	if st.SHA256 == "" || l.SHA256 == "" || st.SHA256 == l.SHA256 {
		return nil // no source recorded (a lab made in code), or the same
	}
	e := &SourceError{Lab: l.Name, File: l.File, SHA256: l.SHA256, Deployed: st.File, DeployedSHA256: st.SHA256}
	if l.Source == nil {
		e.differencesError = errors.New("the file given is not a valid lab")
		return e
	}
	from, err := st.Spec()
	if err != nil {
		e.differencesError = err
		return e
	}
	to := l
	if st.Host != "" && l.OnHost() == "" {
		if to, err = l.PartOf(st.Host); err != nil {
			e.differencesError = err
			return e
		}
	}
	ds := Differences(from, to)
	e.SameLab = len(ds) == 0
	if len(ds) > maxDifferences {
		e.Differences, e.MoreDifferences = ds[:maxDifferences], len(ds)-maxDifferences
	} else {
		e.Differences = ds
	}
	return e
}

// Differences lists, as apply would change them, where lab to differs
// from the deployed lab from: each step of one that the other lacks,
// named "the deployed lab has ..." or "the file has ...". It runs no step.
func Differences(from, to *spec.Lab) []string {
	a, b := Plan(from), Plan(to)
	inA, inB := keys(a), keys(b)
	var out []string
	for _, s := range a {
		if !inB[s.KeyOf()] && !ignoredDifference(s) {
			out = append(out, "the deployed lab has "+s.Name)
		}
	}
	for _, s := range b {
		if !inA[s.KeyOf()] && !ignoredDifference(s) {
			out = append(out, "the file has "+s.Name)
		}
	}
	return out
}

func keys(steps []plan.Step[*deployer]) map[string]bool {
	out := make(map[string]bool, len(steps))
	for _, s := range steps {
		out[s.KeyOf()] = true
	}
	return out
}

// ignoredDifference: steps every lab has whose keys follow others (the
// waits and checks), which say nothing of what differs.
func ignoredDifference(s plan.Step[*deployer]) bool {
	return s.Key == waitKey || s.Key == checkServicesKey
}

// AsDeployed is the lab of name as it was deployed here (this host's part
// of it), for a verb run with --as-deployed: its File is the path it was
// deployed from and its SHA256 that file's, so that what the verb
// reports and stamps names that lab, never another file.
func (m *Manager) AsDeployed(name string) (*spec.Lab, error) {
	st, err := m.Recorded(name)
	if err != nil {
		return nil, err
	}
	whole, err := spec.Parse(st.File, []byte(st.Source))
	if err != nil {
		return nil, fmt.Errorf("recorded topology of lab %s: %w", name, err)
	}
	if st.Prefix != "" && st.Prefix != whole.Prefix {
		if err := whole.WithPrefix(st.Prefix); err != nil {
			return nil, err
		}
	}
	if st.Host == "" {
		return whole, nil
	}
	return whole.PartOf(st.Host)
}
