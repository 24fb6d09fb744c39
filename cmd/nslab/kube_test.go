package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// localCluster is a real Kubernetes cluster on this machine, made by
// deploy/kubernetes/local-cluster: three nodes a, b and c, each a network
// and a mount namespace with its own containerd (runc) and kubelet, the
// control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler) on node a, kube-proxy on each; every part built here by
// make kube-parts, the agents' image by make kube-image.
type localCluster struct {
	t      *testing.T
	dir    string
	prefix string
	parts  string
	nslab  string // the nslab the image holds: the coordinator runs it too
	image  string // the agents' image reference
}

// newLocalCluster brings the cluster up with the images imported, and
// takes it down when the test ends.
func newLocalCluster(t *testing.T) *localCluster {
	t.Helper()
	parts, images, bin := os.Getenv("NSLAB_KUBE_PARTS"), os.Getenv("NSLAB_KUBE_IMAGES"), os.Getenv("NSLAB_KUBE_NSLAB")
	if parts == "" || images == "" || bin == "" {
		t.Skip("NSLAB_KUBE_PARTS, NSLAB_KUBE_IMAGES or NSLAB_KUBE_NSLAB unset: make test-kubernetes builds the cluster's parts and the images, and runs this")
	}
	if os.Geteuid() != 0 {
		t.Skip("a cluster's nodes are namespaces: root only")
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	k := &localCluster{t: t, dir: t.TempDir(), prefix: "nk" + hex.EncodeToString(suffix), parts: parts, nslab: bin}
	os.Chmod(k.dir, 0o755)
	// The machine as the cluster found it, compared once it is down (this
	// cleanup runs after the one that takes it down): the settings a
	// kubelet changes at start, and the forwarding new namespaces inherit.
	machine := func() string {
		var b strings.Builder
		for _, f := range []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward"} {
			v, _ := os.ReadFile("/proc/sys/" + f)
			fmt.Fprintf(&b, "%s=%s ", f, strings.TrimSpace(string(v)))
		}
		return b.String()
	}
	before := machine()
	t.Cleanup(func() {
		if after := machine(); after != before {
			t.Errorf("the machine's settings were %s before the cluster, %s after", before, after)
		}
	})
	imageFiles := strings.Fields(images)
	k.image = imageRef(t, imageFiles[0])
	cmd := exec.Command("../../deploy/kubernetes/local-cluster", append([]string{"up", k.dir}, imageFiles...)...)
	cmd.Env = append(os.Environ(), "PREFIX="+k.prefix, "KUBE_PARTS="+parts)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range []string{"kube-controller-manager", "kubelet-a", "kubelet-b", "kubelet-c", "containerd-b"} {
				data, _ := os.ReadFile(filepath.Join(k.dir, l+".log"))
				t.Logf("%s.log, its end:\n%s", l, tail(string(data), 15))
			}
			if logs, err := k.kubectl("logs", "-n", "nslab-system", "-l", "app.kubernetes.io/name=nslab-agent", "--tail", "30", "--prefix"); err == nil {
				t.Logf("the agents' logs:\n%s", logs)
			}
		}
		down := exec.Command("../../deploy/kubernetes/local-cluster", "down", k.dir)
		down.Env = cmd.Env
		if out, err := down.CombinedOutput(); err != nil {
			t.Errorf("local-cluster down: %v\n%s", err, out)
		}
	})
	if err != nil {
		t.Fatalf("local-cluster up: %v\n%s", err, out)
	}
	t.Logf("the cluster came up in %v, three nodes Ready", time.Since(start).Round(time.Millisecond))
	return k
}

// imageRef is the reference a docker-archive tarball tags its image with.
func imageRef(t *testing.T, tarball string) string {
	t.Helper()
	out, err := exec.Command("tar", "-xOf", tarball, "manifest.json").Output()
	if err != nil {
		t.Fatalf("%s: %v", tarball, err)
	}
	var m []struct{ RepoTags []string }
	if json.Unmarshal(out, &m) != nil || len(m) != 1 || len(m[0].RepoTags) != 1 {
		t.Fatalf("%s: manifest.json %s", tarball, out)
	}
	return m[0].RepoTags[0]
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// kubectl runs the release's kubectl as the cluster's admin, from node
// a's network (where the API server is).
func (k *localCluster) kubectl(args ...string) (string, error) {
	return k.kubectlIn(nil, args...)
}

func (k *localCluster) kubectlIn(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("nsenter", append([]string{"--net=/run/netns/" + k.prefix + "-a", filepath.Join(k.parts, "kubectl"), "--kubeconfig", filepath.Join(k.dir, "admin.kubeconfig")}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return string(out), nil
}

func (k *localCluster) mustKubectl(args ...string) string {
	k.t.Helper()
	out, err := k.kubectl(args...)
	if err != nil {
		k.t.Fatal(err)
	}
	return out
}

// run runs the nslab of the image as the user would, from node a's
// network with the admin's kubeconfig: its exit code and what it printed.
func (k *localCluster) run(args ...string) (int, string, string) {
	cmd := exec.Command("nsenter", append([]string{"--net=/run/netns/" + k.prefix + "-a", "env", "KUBECONFIG=" + filepath.Join(k.dir, "admin.kubeconfig"), k.nslab}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
		errOut.WriteString(err.Error())
	}
	return code, out.String(), errOut.String()
}

// inNode runs a command in node's mount and network namespaces (its
// host's view: /run/netns holds the node's lab namespaces).
func (k *localCluster) inNode(node string, args ...string) (string, error) {
	pid, err := os.ReadFile(filepath.Join(k.dir, node, "holder.pid"))
	if err != nil {
		return "", err
	}
	out, err := exec.Command("nsenter", append([]string{"-t", strings.TrimSpace(string(pid)), "-m", "-n", "--"}, args...)...).CombinedOutput()
	return string(out), err
}

// kubeLab is a Lab as kubectl get -o json shows it.
type kubeLab struct {
	Metadata struct {
		UID        string
		Finalizers []string
	}
	Spec struct {
		Plan struct{ Hash string }
	}
	Status struct {
		Phase, Ready, Message string
		Hosts                 map[string]struct{ Phase, PlanHash, Message, Updated string }
	}
}

func (k *localCluster) lab(name string) (kubeLab, error) {
	var l kubeLab
	out, err := k.kubectl("get", "lab", name, "-o", "json")
	if err != nil {
		return l, err
	}
	return l, json.Unmarshal([]byte(out), &l)
}

// await polls every 200 ms until ok, for at most limit: the bound is a
// timeout against a stuck cluster, not a measure of speed.
func (k *localCluster) await(what string, limit time.Duration, ok func() bool) time.Duration {
	k.t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > limit { // timeout: against a stuck cluster; each wait's limit is minutes, ten times its usual time
			k.t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return time.Since(start)
}

// TestPrivilegedKubernetes: nslab on a real cluster. The DaemonSet's
// controller makes the agents' pods from the image built here, the
// scheduler places one on each node and its kubelet runs it through
// containerd and runc. A lab of FRR OSPF routers over the three nodes
// deploys as a Lab, converges, and a bench across the nodes accounts for
// every packet; the lab keeps forwarding while node b's agent pod is
// deleted, the new pod takes its share up, and the Lab says Deployed
// throughout; a namespace removed by hand shows as drift; deleting the
// Lab leaves nothing on any node. Then the controller's faults and the
// policy: a plan the agents refuse leaves a Lab that deletes; a status
// write refused for a while still ends Deployed, the shares built once;
// an agent's token cannot change a Lab's spec nor another node's status.
func TestPrivilegedKubernetes(t *testing.T) {
	k := newLocalCluster(t)
	manifests, err := exec.Command(filepath.Join(filepath.Dir(k.nslab), kubeHelperName), "manifests", "-image", k.image).Output()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := k.kubectlIn(manifests, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	k.mustKubectl("rollout", "status", "ds/nslab-agent", "-n", "nslab-system", "--timeout=180s")
	pods := k.agentPods(t)
	t.Run("agents from the DaemonSet", func(t *testing.T) {
		for _, node := range []string{"a", "b", "c"} {
			p, ok := pods[node]
			if !ok || p.Status.Phase != "Running" || len(p.Metadata.OwnerReferences) != 1 || p.Metadata.OwnerReferences[0].Kind != "DaemonSet" ||
				p.Spec.Containers[0].Image != k.image || !p.ready() {
				t.Errorf("node %s's agent pod: %+v", node, p)
			}
		}
		t.Logf("$ kubectl get ds,pods -n nslab-system\n%s", k.mustKubectl("get", "ds,pods", "-n", "nslab-system"))
	})
	file := "../../examples/kubernetes-ospf.yaml"
	if code, out, errOut := k.run("deploy", "--kubernetes", file); code != 0 || !strings.Contains(out, "deployed lab kospf on hosts a, b, c as Lab default/kospf") {
		t.Fatalf("deploy --kubernetes: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := k.run("check", "--kubernetes", "--wait", "90s", file); code != 0 || strings.Count(out, " 0 broken, 0 unexpectedly reachable") != 3 {
		t.Fatalf("check --kubernetes: %d %s %s", code, out, errOut)
	}
	t.Run("bench across nodes", func(t *testing.T) {
		code, out, errOut := k.run("bench", "--kubernetes", file)
		m := regexp.MustCompile(`sent (\d+) = received (\d+) \+ named drops (\d+) \+ unaccounted 0\n`).FindStringSubmatch(out)
		if code != 0 || m == nil || must(strconv.Atoi(m[1])) != must(strconv.Atoi(m[2]))+must(strconv.Atoi(m[3])) {
			t.Fatalf("bench --kubernetes: %d %s %s", code, out, errOut)
		}
		for _, hop := range []string{"client:eth0 (host a)", "r1:eth1 (host a)", "r2:eth0 (host b)", "r2:eth1 (host b)", "r3:eth0 (host c)", "server:eth0 (host c)"} {
			if !strings.Contains(out, hop) {
				t.Errorf("bench: no hop %s:\n%s", hop, out)
			}
		}
	})
	t.Run("agent pod deleted", func(t *testing.T) { k.agentRestart(t, pods["b"].Metadata.Name) })
	t.Run("drift", func(t *testing.T) {
		if out, err := k.inNode("c", "ip", "netns", "del", "server"); err != nil {
			t.Fatalf("remove server's namespace on node c: %v %s", err, out)
		}
		took := k.await("the Lab to show the drift", 3*time.Minute, func() bool {
			l, err := k.lab("kospf")
			return err == nil && l.Status.Phase == "Drifted" && l.Status.Hosts["c"].Message == "node server's namespace is gone"
		})
		t.Logf("drift shown %v after the namespace went (the agents check every 30 s)", took.Round(100*time.Millisecond))
	})
	if out, err := k.kubectl("delete", "lab", "kospf", "--timeout=120s"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	k.assertNothingLeft(t)
	t.Run("refused plan", func(t *testing.T) { k.refusedPlan(t, file) })
	t.Run("status write refused", func(t *testing.T) { k.statusRefused(t, file) })
}

// agentPod is an agent's pod as kubectl get -o json shows it.
type agentPod struct {
	Metadata struct {
		Name            string
		OwnerReferences []struct{ Kind string }
	}
	Spec struct {
		NodeName   string
		Containers []struct{ Image string }
	}
	Status struct {
		Phase      string
		Conditions []struct{ Type, Status string }
	}
}

func (p agentPod) ready() bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c struct{ Type, Status string }) bool { return c.Type == "Ready" && c.Status == "True" })
}

// agentPods are the agents' pods by node.
func (k *localCluster) agentPods(t *testing.T) map[string]agentPod {
	t.Helper()
	var list struct{ Items []agentPod }
	if err := json.Unmarshal([]byte(k.mustKubectl("get", "pods", "-n", "nslab-system", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]agentPod{}
	for _, p := range list.Items {
		out[p.Spec.NodeName] = p
	}
	return out
}

// agentRestart deletes node b's agent pod (name) while the client pings
// the server through r2 on node b, 5 echoes a second for 20 s. r2's
// routing daemons are the same processes after (they run outside the
// pod's cgroup), the new pod reports the share it found, the Lab's phase
// is Deployed at every reading meanwhile, the lab forwards after, and
// vtysh from the new pod reaches r2's daemons (its view outlived the
// old pod).
func (k *localCluster) agentRestart(t *testing.T, name string) {
	daemons := func() string {
		out, _ := k.inNode("b", "sh", "-c", "for p in $(ip netns pids r2); do cat /proc/$p/comm; echo $p; done | paste - - | sort")
		var ds []string // the routing daemons (not a passing vtysh)
		for _, l := range strings.Split(out, "\n") {
			if name, _, _ := strings.Cut(l, "\t"); slices.Contains([]string{"zebra", "ospfd", "staticd", "mgmtd", "watchfrr"}, name) {
				ds = append(ds, l)
			}
		}
		return strings.Join(ds, "\n")
	}
	before := daemons()
	if !strings.Contains(before, "ospfd") {
		t.Fatalf("r2 runs no ospfd: %q", before)
	}
	pid, _ := os.ReadFile(filepath.Join(k.dir, "a", "holder.pid"))
	ping := exec.Command("nsenter", "-t", strings.TrimSpace(string(pid)), "-m", "--", "ip", "netns", "exec", "client", "ping", "-c", "100", "-i", "0.2", "-W", "1", "10.3.0.1")
	var pingOut bytes.Buffer
	ping.Stdout = &pingOut
	if err := ping.Start(); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	time.Sleep(2 * time.Second)
	k.mustKubectl("delete", "pod", "-n", "nslab-system", name, "--wait=false")
	ended := make(chan error, 1)
	go func() { ended <- ping.Wait() }()
	var phases []string
	for reading := true; reading; {
		if l, err := k.lab("kospf"); err == nil {
			phases = append(phases, l.Status.Phase)
		}
		select {
		case <-ended:
			reading = false
		case <-time.After(500 * time.Millisecond):
		}
	}
	t.Logf("ping from client to server through node b while its agent pod was deleted:\n%s", tail(pingOut.String(), 3))
	for _, p := range phases {
		if p != "Deployed" {
			t.Errorf("the Lab's phase during the pod's deletion: %v, want Deployed at every one of %d readings", phases, len(phases))
			break
		}
	}
	k.await("node b's new agent pod to take its share up", 2*time.Minute, func() bool {
		l, err := k.lab("kospf")
		up, _ := time.Parse(time.RFC3339Nano, l.Status.Hosts["b"].Updated)
		return err == nil && strings.HasPrefix(l.Status.Hosts["b"].Message, "taken up by this agent: 1 nodes present") && up.After(deleted)
	})
	if after := daemons(); after != before {
		t.Errorf("r2's processes were %q before the pod's deletion, %q after", before, after)
	}
	// r2's view is held in node b's mount namespace, not the old pod's:
	// vtysh from the new pod, in r2's view, reaches r2's daemons.
	newPod := k.agentPods(t)["b"].Metadata.Name
	if out, err := k.kubectl("exec", "-n", "nslab-system", newPod, "--", "nslab", "exec", "kospf:r2", "--", "vtysh", "-c", "show ip ospf neighbor"); err != nil || strings.Count(out, "Full/") != 2 {
		t.Errorf("vtysh in r2 from node b's new agent pod: %v\n%s", err, out)
	}
	if out, err := k.inNode("a", "ip", "netns", "exec", "client", "ping", "-c", "3", "-W", "2", "10.3.0.1"); err != nil {
		t.Errorf("the lab does not forward after the agent's restart: %v %s", err, out)
	}
}

// assertNothingLeft: no node holds a namespace, a VXLAN or veth, a mount
// of nslab's or a process of the lab.
func (k *localCluster) assertNothingLeft(t *testing.T) {
	t.Helper()
	for _, node := range []string{"a", "b", "c"} {
		out, err := k.inNode(node, "sh", "-c", "ls -A /run/netns; ls -A /run/nslab | grep -vx lock; ip -o link | grep -v ': lo: \\|: eth0@'; grep -c 'nslab-netns\\|nslab-views\\|nslab-view' /proc/self/mountinfo | grep -vx 0; true")
		if err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("node %s holds: %v %q", node, err, out)
		}
	}
	// The agents' processes outside their pods (a verb, a lab's daemons):
	// none once the destroys have ended. A verb in its last moment, or a
	// daemon killed and not yet gone, is waited for, 10 s at most.
	var left string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		procs, _ := os.ReadFile("/sys/fs/cgroup/pids/nslab-agent/cgroup.procs")
		left = ""
		for _, pid := range strings.Fields(string(procs)) {
			comm, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			left += fmt.Sprintf("%s (%s) ", pid, strings.ReplaceAll(strings.TrimSpace(string(comm)), "\x00", " "))
		}
		if left == "" {
			return
		}
	}
	t.Errorf("processes the agents started are left: %s", left)
}

// refusedPlan: a Lab whose plan no agent computes from its file (as a
// coordinator of another build would write it) is Failed on every host
// with the reason, and a kubectl delete of it ends within 30 s: the
// agents take their finalizers off without a plan.
func (k *localCluster) refusedPlan(t *testing.T, file string) {
	if code, out, errOut := k.run("deploy", "--kubernetes", file); code != 0 {
		t.Fatalf("deploy: %d %s %s", code, out, errOut)
	}
	var lab map[string]any
	if err := json.Unmarshal([]byte(k.mustKubectl("get", "lab", "kospf", "-o", "json")), &lab); err != nil {
		t.Fatal(err)
	}
	if out, err := k.kubectl("delete", "lab", "kospf", "--timeout=120s"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	delete(lab, "status")
	meta := lab["metadata"].(map[string]any)
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"} {
		delete(meta, f)
	}
	plan := lab["spec"].(map[string]any)["plan"].(map[string]any)
	plan["hash"] = strings.Repeat("0", 64) // another build's
	data, _ := json.Marshal(lab)
	if out, err := k.kubectlIn(data, "create", "-f", "-"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	k.await("every host to refuse the plan", 2*time.Minute, func() bool {
		l, err := k.lab("kospf")
		return err == nil && l.Status.Phase == "Failed" && strings.HasPrefix(l.Status.Hosts["b"].Message, "plan refused: ")
	})
	l, _ := k.lab("kospf")
	t.Logf("host b's status: %s", l.Status.Hosts["b"].Message)
	start := time.Now()
	if out, err := k.kubectl("delete", "lab", "kospf", "--timeout=30s"); err != nil {
		t.Fatalf("a Lab with a refused plan does not delete within 30 s: %v %s", err, out)
	}
	t.Logf("deleted in %v", time.Since(start).Round(time.Millisecond))
	k.assertNothingLeft(t)
}

// denyStatus is a policy of the test's: the agents may not write a Lab's
// status while it lacks the annotation test.nslab.dev/allow-status, as an
// API server failing those writes would.
const denyStatus = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: test-deny-status}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - {apiGroups: [nslab.dev], apiVersions: ["*"], resources: [labs/status], operations: [UPDATE]}
  matchConditions:
    - {name: agent, expression: "request.userInfo.username == 'system:serviceaccount:nslab-system:nslab-agent'"}
  validations:
    - expression: "has(oldObject.metadata.annotations) && 'test.nslab.dev/allow-status' in oldObject.metadata.annotations"
      message: "injected: status writes refused"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: test-deny-status}
spec: {policyName: test-deny-status, validationActions: [Deny]}
`

// statusRefused: with the agents' status writes refused, a deploy's
// shares are built and their status kept; once the writes are let
// through, the Lab ends Deployed and each node built its share once.
// Then the policy of deploy/kubernetes: node b's token may write host
// b's status, and is refused (403) a change of the spec and of host c's
// status.
func (k *localCluster) statusRefused(t *testing.T, file string) {
	if out, err := k.kubectlIn([]byte(denyStatus), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Cleanup(func() {
		k.kubectl("delete", "validatingadmissionpolicy,validatingadmissionpolicybinding", "test-deny-status")
	})
	k.await("the policy to be in force", time.Minute, func() bool {
		out, _ := k.kubectl("get", "validatingadmissionpolicy", "test-deny-status", "-o", "jsonpath={.status.observedGeneration}")
		return out == "1"
	})
	agentLogs := func() string {
		logs, _ := k.kubectl("logs", "-n", "nslab-system", "-l", "app.kubernetes.io/name=nslab-agent", "--tail", "-1")
		return logs
	}
	deploys := func(logs string) (n int) {
		for _, h := range []string{"a", "b", "c"} {
			n += strings.Count(logs, "Lab default/kospf: host "+h+": deploy: ")
		}
		return n
	}
	before := deploys(agentLogs())
	deploy := exec.Command("nsenter", "--net=/run/netns/"+k.prefix+"-a", "env", "KUBECONFIG="+filepath.Join(k.dir, "admin.kubeconfig"), k.nslab, "deploy", "--kubernetes", file)
	var out, errOut bytes.Buffer
	deploy.Stdout, deploy.Stderr = &out, &errOut
	if err := deploy.Start(); err != nil {
		t.Fatal(err)
	}
	k.await("every agent's status write to be refused", 2*time.Minute, func() bool {
		logs, _ := k.kubectl("logs", "-n", "nslab-system", "-l", "app.kubernetes.io/name=nslab-agent", "--tail", "-1")
		return strings.Count(logs, "Lab default/kospf: store host") >= 3 && strings.Contains(logs, "injected: status writes refused")
	})
	if l, err := k.lab("kospf"); err != nil || l.Status.Phase != "" {
		t.Errorf("the Lab's status with every write refused: %+v %v", l.Status, err)
	}
	k.mustKubectl("annotate", "lab", "kospf", "test.nslab.dev/allow-status=yes")
	err := deploy.Wait()
	if err != nil || !strings.Contains(out.String(), "deployed lab kospf on hosts a, b, c") {
		t.Fatalf("the deploy after the writes were let through: %v %s %s", err, out.String(), errOut.String())
	}
	if logs := agentLogs(); deploys(logs)-before != 3 {
		t.Errorf("%d deploys of kospf's shares, want one per node:\n%s", deploys(logs)-before, logs)
	}
	k.agentPolicy(t)
	if code, out, errOut := k.run("destroy", "--kubernetes", file); code != 0 {
		t.Errorf("destroy: %d %s %s", code, out, errOut)
	}
	k.assertNothingLeft(t)
}

// agentPolicy: node b's agent's own token (read in its pod) may patch
// host b's status entry, and is refused a change of the Lab's spec and
// of host c's entry, each with the policy's reason.
func (k *localCluster) agentPolicy(t *testing.T) {
	token := strings.TrimSpace(k.mustKubectl("exec", "-n", "nslab-system", k.agentPods(t)["b"].Metadata.Name, "--", "cat", "/var/run/secrets/kubernetes.io/serviceaccount/token"))
	// The Lab with its spec changed, for an update (the agent's role may
	// update Labs, to take its finalizer off: the policy is what stops it).
	as := func(args ...string) (string, error) {
		var stdin []byte
		if args[0] == "replace" { // the Lab as it is now, its spec changed
			var lab map[string]any
			if err := json.Unmarshal([]byte(k.mustKubectl("get", "lab", "kospf", "-o", "json")), &lab); err != nil {
				t.Fatal(err)
			}
			lab["spec"].(map[string]any)["hosts"] = 4
			stdin, _ = json.Marshal(lab)
		}
		return k.kubectlIn(stdin, append([]string{"--token", token}, args...)...)
	}
	for _, c := range []struct {
		args []string
		want string // "": allowed
	}{
		{[]string{"patch", "lab", "kospf", "--subresource", "status", "--type", "merge", "-p", `{"status":{"hosts":{"b":{"message":"written by b's token"}}}}`}, ""},
		{[]string{"replace", "-f", "-"}, "an nslab agent may not change a Lab's spec"},
		{[]string{"patch", "lab", "kospf", "--subresource", "status", "--type", "merge", "-p", `{"status":{"hosts":{"c":{"phase":"Failed"}}}}`}, "an nslab agent on node b may write the status of its own hosts only (b)"},
	} {
		out, err := as(c.args...)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("node b's token: %v %s", err, out)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), "Forbidden") || !strings.Contains(err.Error(), c.want)):
			t.Errorf("node b's token, %s: %v %s, want refused (403): %s", strings.Join(c.args, " "), err, out, c.want)
		case c.want != "":
			_, why, _ := strings.Cut(err.Error(), "Error from server")
			t.Logf("refused as it should be: %s: Error from server%s", strings.Join(c.args[:min(3, len(c.args))], " "), why)
		}
	}
}
