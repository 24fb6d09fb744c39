// Package fleet deploys and runs a lab that spans hosts from one machine,
// the coordinator: the plan of every host's share is computed once there
// (plan.go), each host runs an agent that builds and reads its share
// (agent.go), the coordinator reaches the agents through a Shell (over SSH,
// ssh.go; on Kubernetes, pods/exec into the agent's pod, which
// topology/kube and cmd/nslab-kube give) with a line-delimited JSON
// protocol (protocol.go), and runs each verb on every host in parallel,
// taking every share back when one host fails (coordinator.go). A share is
// a lab's name and source (and owner): a host's lab of the same name from
// another file is another lab, never touched (deploy.go).
//
// The agent opens no listener: it speaks on the standard input and output
// of the session the coordinator opened (ssh's, authenticated both ways:
// the host by known_hosts, the user by its key; or the API server's exec
// stream).
// An agent runs nslab's own verbs for its host's share as child processes,
// in the host's namespaces, exactly as a user typing `nslab --host H VERB`
// there would.
package fleet
