// Package topology is nslab's lab side: everything that reads a lab file
// and builds, inspects, changes and removes the lab on the machine. It
// holds no code of its own; each sub-package has one job (see
// docs/design/layout.md), and none imports anything of pktgen.
//
// The rules every library package here and under pktgen keeps, and cmd
// relies on:
//
//   - a library returns typed results and errors that name the lab's
//     things (nodes, interfaces, file paths and keys), never a command-line
//     flag; a problem with one field of a request is a typed error naming
//     the field (pktgen/bench.FieldError), which cmd names as its flag;
//   - each result type renders itself where it is defined (inspect.LabInfo,
//     deployed.TracedPath, check.Pairs, the pktgen/report types), to an
//     io.Writer; no library writes to the process's standard output or
//     error (imports_test.go checks it);
//   - cmd chooses the format and where it goes;
//   - each verb in cmd/nslab is an options type, a function that reads the
//     flags into it and a run function tests call without the binary
//     (cmd/nslab/verb.go).
//
// Kinds of interfaces are explicit (spec.Kind): every switch over a kind
// lists all of them, and make lint's exhaustive linter names the switch a
// new kind was forgotten in.
package topology
