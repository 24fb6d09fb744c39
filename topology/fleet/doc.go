// Package fleet deploys and runs a lab that spans hosts from one machine,
// the coordinator: the plan of every host's share is computed once there
// (plan.go), each host runs an agent that builds and reads its share
// (agent.go), the coordinator reaches the agents over SSH (ssh.go) with a
// line-delimited JSON protocol (protocol.go), and runs each verb on every
// host in parallel, taking every share back when one host fails
// (coordinator.go).
//
// The agent opens no listener: it speaks on the standard input and output
// of the ssh session the coordinator opened, so the channel is SSH's,
// authenticated both ways (the host by known_hosts, the user by its key).
// An agent runs nslab's own verbs for its host's share as child processes,
// in the host's namespaces, exactly as a user typing `nslab --host H VERB`
// there would.
package fleet
