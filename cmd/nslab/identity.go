package main

import (
	"errors"
	"fmt"

	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// asDeployedName is the flag of every verb given a FILE that acts on the
// deployed lab of its name: act on that lab as it was deployed, from
// whatever file, instead of refusing it.
const asDeployedName = "as-deployed"

func asDeployedFlag() *cli.BoolFlag {
	return &cli.BoolFlag{Name: asDeployedName, Usage: "act on the lab of the file's name as it was deployed, when that was from another file (reports then name that file and its SHA-256)"}
}

// deployedLab is the lab a verb given lab l's file acts on: l itself
// when the lab of its name is not deployed here or was deployed from a
// file of l's contents. When it was deployed from another file, the verb
// refuses (a *lab.SourceError naming the first differences and the two
// ways on), or with --as-deployed acts on the lab as deployed: its file,
// its hash, this host's part of it.
func deployedLab(c *cli.Context, m *lab.Manager, l *spec.Lab) (*spec.Lab, error) {
	err := m.Identify(l)
	se, ok := errors.AsType[*lab.SourceError](err)
	switch {
	case err == nil:
		return l, nil
	case !ok:
		return nil, err
	case c.Bool(asDeployedName):
		return m.AsDeployed(l.Name)
	case se.SameLab:
		// The lab deployed is the one the file builds, step for step: the
		// verb answers about it, and says whose file it was deployed from.
		fmt.Fprintf(c.App.ErrWriter, "nslab: note: %s; acting on it as %s says (nslab apply %s records the file)\n", se, l.File, l.File)
		return l, nil
	}
	return nil, cli.Exit(se.Error()+". "+waysOn(c.Command.FullName(), se), 1)
}

// waysOn is what a user refused by a SourceError can do: make the lab
// what the file says, or act on it as deployed (destroy: remove it).
func waysOn(verb string, se *lab.SourceError) string {
	more := ""
	if se.MoreDifferences > 0 {
		more = fmt.Sprintf(" (nslab apply --dry-run %s lists every difference)", se.File)
	}
	if verb == "destroy" {
		return fmt.Sprintf("Nothing was done: destroy that lab with nslab destroy --name %s, or nslab destroy --%s %s%s", se.Lab, asDeployedName, se.File, more)
	}
	return fmt.Sprintf("Nothing was done: make the lab what the file says with nslab apply %s%s, or run nslab %s --%s to act on the lab as it was deployed", se.File, more, verb, asDeployedName)
}

// identifiedName is deployedLab for a verb that takes the lab by name
// (inspect, destroy, node, link, impair, top, web, metrics): the name,
// once the file's contents are those the lab was deployed from (or
// --as-deployed says to act on it as deployed).
func identifiedName(c *cli.Context, m *lab.Manager, l *spec.Lab) (string, error) {
	if err := m.CheckOwner(l.Name); err != nil {
		return "", err // an agent's: the lab of this name is another owner's, whatever its file
	}
	if _, err := deployedLab(c, m, l); err != nil {
		return "", err
	}
	return l.Name, nil
}

// readDeployed is readPart for the verbs that act on the deployed lab of
// FILE's name: refused, or the lab as deployed, when it was deployed from
// another file (see deployedLab).
func readDeployed(c *cli.Context) (*spec.Lab, error) {
	l, err := readPart(c)
	if err != nil {
		return nil, err
	}
	return deployedLab(c, manager(c), l)
}
