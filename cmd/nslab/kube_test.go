package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/nslab/nslab/topology/fleet"
	"github.com/nslab/nslab/topology/spec"
	"gopkg.in/yaml.v3"
)

// cluster is a Kubernetes control plane on simulated host a: a real etcd
// (Debian's etcd-server) and a real kube-apiserver (built from
// k8s.io/kubernetes by make kube-apiserver), RBAC on, reached at
// https://192.168.77.1:6443 by the coordinator and the agents.
type cluster struct {
	s     *sshHosts
	dir   string
	procs []*exec.Cmd
}

const adminToken = "nslab-test-admin"

// newCluster starts etcd and kube-apiserver in host a's namespaces.
func newCluster(t *testing.T, s *sshHosts, apiserver string) *cluster {
	t.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Fatal("no etcd: make test-kubernetes installs etcd-server")
	}
	k := &cluster{s: s, dir: t.TempDir()}
	os.Chmod(k.dir, 0o755)
	t.Cleanup(func() { // on failure, what the agents said
		logs, _ := filepath.Glob(filepath.Join(k.dir, "agent-*.log"))
		kubelets, _ := filepath.Glob(filepath.Join(k.dir, "kubelet-*.log"))
		for _, l := range append(logs, kubelets...) {
			if data, _ := os.ReadFile(l); t.Failed() {
				t.Logf("%s:\n%s", filepath.Base(l), data)
			}
		}
	})
	// Host a's /root is its own: the binary goes where it sees it.
	bin := filepath.Join(k.dir, "kube-apiserver")
	if out, err := exec.Command("cp", apiserver, bin).CombinedOutput(); err != nil {
		t.Fatalf("copy kube-apiserver: %v %s", err, out)
	}
	apiserver = bin
	if out, err := exec.Command("openssl", "genrsa", "-out", filepath.Join(k.dir, "sa.key"), "2048").CombinedOutput(); err != nil {
		t.Fatalf("openssl: %v %s", err, out)
	}
	exec.Command("openssl", "rsa", "-in", filepath.Join(k.dir, "sa.key"), "-pubout", "-out", filepath.Join(k.dir, "sa.pub")).Run()
	os.WriteFile(filepath.Join(k.dir, "tokens.csv"), []byte(adminToken+`,admin,admin,"system:masters"`+"\n"), 0o600)
	k.start(t, "etcd", "etcd", "--data-dir", filepath.Join(k.dir, "etcd"), "--listen-client-urls", "http://127.0.0.1:2379",
		"--advertise-client-urls", "http://127.0.0.1:2379", "--listen-peer-urls", "http://127.0.0.1:2380")
	k.start(t, "kube-apiserver", apiserver, "--etcd-servers=http://127.0.0.1:2379", "--cert-dir="+filepath.Join(k.dir, "certs"),
		"--secure-port=6443", "--bind-address=192.168.77.1", "--advertise-address=192.168.77.1", "--service-cluster-ip-range=10.0.0.0/24",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+filepath.Join(k.dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(k.dir, "sa.key"), "--authorization-mode=RBAC",
		"--token-auth-file="+filepath.Join(k.dir, "tokens.csv"), "--allow-privileged=true", "--disable-admission-plugins=ServiceAccount",
		"--shutdown-delay-duration=0s", "--kubelet-preferred-address-types=InternalIP")
	waitFor(t, "kube-apiserver to be ready", func() bool {
		code, _ := k.api("GET", "/readyz", adminToken, nil)
		return code == 200
	})
	return k
}

// start runs a program in host a's namespaces until the test ends
// (SIGTERM, then the program's exit awaited).
func (k *cluster) start(t *testing.T, name string, argv ...string) {
	t.Helper()
	cmd := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(k.s.hosts[0].holder.Process.Pid), "-m", "-n"}, argv...)...)
	log, _ := os.Create(filepath.Join(k.dir, name+".log"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k.procs = append(k.procs, cmd)
	t.Cleanup(func() { k.stop(cmd) })
}

func (k *cluster) stop(cmd *exec.Cmd) {
	if cmd.ProcessState == nil {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
}

// api is one request to the API server, from host a, as curl makes it:
// the status code and the body.
func (k *cluster) api(method, path, token string, body []byte, query ...string) (int, []byte) {
	url := "https://192.168.77.1:6443" + path
	if len(query) > 0 {
		url += "?" + strings.Join(query, "&")
	}
	args := []string{"-t", strconv.Itoa(k.s.hosts[0].holder.Process.Pid), "-n", "curl", "-sk", "-X", method, "-H", "Authorization: Bearer " + token,
		"-H", "Content-Type: application/yaml", "-H", "Accept: application/json", "-w", "\n%{http_code}", url}
	if body != nil {
		args = append(args, "--data-binary", "@-")
	}
	cmd := exec.Command("nsenter", args...)
	cmd.Stdin = bytes.NewReader(body)
	out, _ := cmd.Output()
	i := bytes.LastIndexByte(out, '\n')
	if i < 0 {
		return 0, out
	}
	code, _ := strconv.Atoi(string(out[i+1:]))
	return code, out[:i]
}

// kubeconfig writes a kubeconfig for user with token, trusting the API
// server's own certificate.
func (k *cluster) kubeconfig(t *testing.T, user, token string) string {
	path := filepath.Join(k.dir, user+".kubeconfig")
	cfg := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster: {server: 'https://192.168.77.1:6443', certificate-authority: %s}\nusers:\n- name: %s\n  user: {token: %s}\ncontexts:\n- name: lab\n  context: {cluster: lab, user: %s, namespace: default}\ncurrent-context: lab\n",
		filepath.Join(k.dir, "certs", "apiserver.crt"), user, token, user)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// create posts every object of a manifest file (YAML documents), each
// first as a server-side dry run: the API server validates it whole
// (schema, RBAC rules, a privileged DaemonSet allowed) and stores nothing.
// Kinds in dryOnly are only dry run.
func (k *cluster) create(t *testing.T, file string, dryOnly ...string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{"Namespace": "/api/v1/namespaces", "ServiceAccount": "/api/v1/namespaces/%s/serviceaccounts",
		"ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles", "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
		"Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles", "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings",
		"DaemonSet": "/apis/apps/v1/namespaces/%s/daemonsets", "CustomResourceDefinition": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || paths[obj.Kind] == "" {
			t.Fatalf("%s: a document of kind %q: %v", file, obj.Kind, err)
		}
		path := paths[obj.Kind]
		if strings.Contains(path, "%s") {
			path = fmt.Sprintf(path, obj.Metadata.Namespace)
		}
		if code, body := k.api("POST", path, adminToken, []byte(doc), "dryRun=All", "fieldValidation=Strict"); code != 201 {
			t.Fatalf("%s: %s %s, dry run: %d %s", file, obj.Kind, obj.Metadata.Name, code, body)
		}
		if !slices.Contains(dryOnly, obj.Kind) {
			if code, body := k.api("POST", path, adminToken, []byte(doc)); code != 201 {
				t.Fatalf("%s: %s %s: %d %s", file, obj.Kind, obj.Metadata.Name, code, body)
			}
		}
	}
}

// user is the kubeconfig of a user granted deploy/kubernetes/user.yaml's
// roles and nothing else (ServiceAccount default/lab-user): the
// coordinator runs every verb as this user.
func (k *cluster) user(t *testing.T) string {
	t.Helper()
	k.create(t, "../../deploy/kubernetes/user.yaml")
	k.api("POST", "/api/v1/namespaces/default/serviceaccounts", adminToken, []byte("metadata: {name: lab-user}"))
	subject := "subjects: [{kind: ServiceAccount, name: lab-user, namespace: default}]"
	for path, binding := range map[string]string{
		"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings":                  "{kind: ClusterRoleBinding, apiVersion: rbac.authorization.k8s.io/v1, metadata: {name: lab-user}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: nslab-user}, %s}",
		"/apis/rbac.authorization.k8s.io/v1/namespaces/nslab-system/rolebindings": "{kind: RoleBinding, apiVersion: rbac.authorization.k8s.io/v1, metadata: {name: lab-user, namespace: nslab-system}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: nslab-user}, %s}",
	} {
		if code, body := k.api("POST", path, adminToken, fmt.Appendf(nil, binding, subject)); code != 201 {
			t.Fatalf("bind lab-user: %d %s", code, body)
		}
	}
	return k.kubeconfig(t, "lab-user", k.token(t, "default", "lab-user"))
}

// token is a ServiceAccount's token (TokenRequest), as a pod would have.
func (k *cluster) token(t *testing.T, ns, sa string) string {
	t.Helper()
	req := []byte(`{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}`)
	code, body := k.api("POST", "/api/v1/namespaces/"+ns+"/serviceaccounts/"+sa+"/token", adminToken, req)
	var tr struct{ Status struct{ Token string } }
	if json.Unmarshal(body, &tr); code != 201 || tr.Status.Token == "" {
		t.Fatalf("token of %s/%s: %d %s", ns, sa, code, body)
	}
	return tr.Status.Token
}

// agent starts nslab agent --kubernetes on host h with kubeconfig, as
// the node of h's name.
func (k *cluster) agent(t *testing.T, h *sshHost, kubeconfig, helpers string) *exec.Cmd {
	t.Helper()
	return k.agentAs(t, h, h.name, kubeconfig, helpers)
}

// agentAs starts nslab agent --kubernetes on host h as node.
func (k *cluster) agentAs(t *testing.T, h *sshHost, node, kubeconfig, helpers string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("nsenter", "-t", strconv.Itoa(h.holder.Process.Pid), "-m", "-n", "env", "NSLAB_RUN_MAIN=1", "TMPDIR="+h.tmp,
		"PATH="+helpers+":"+os.Getenv("PATH"), os.Args[0], "agent", "--kubernetes", "--node", node, "--kubeconfig", kubeconfig)
	log, _ := os.Create(filepath.Join(k.dir, "agent-"+node+".log"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.stop(cmd) })
	return cmd
}

// labStatus is the Lab's status, as kubectl get -o json shows it.
type labStatus struct {
	Spec struct {
		Plan struct{ Hash string }
	}
	Status struct {
		Phase, Ready string
		Hosts        map[string]struct{ Phase, PlanHash, Message string }
	}
}

// TestPrivilegedKubernetes: a real kube-apiserver and etcd on simulated
// host a; the CRD, and the agent's RBAC and DaemonSet (the latter by a
// server-side dry run) from deploy/kubernetes; an agent as a process on
// each of the three hosts with its ServiceAccount's token.
// three-hosts.yaml deploys from one command as a Lab, each host's status
// in the resource; the lab answers; deleting the resource removes every
// share; nslab destroy --kubernetes does too. A ServiceAccount without
// the grant is refused (403) and its agent says so.
func TestPrivilegedKubernetes(t *testing.T) {
	apiserver := os.Getenv("NSLAB_KUBE_APISERVER")
	if apiserver == "" {
		t.Skip("NSLAB_KUBE_APISERVER unset: make test-kubernetes builds kube-apiserver and runs this")
	}
	s := newSSHHosts(t, 3, 1500, nil)
	k := newCluster(t, s, apiserver)
	helpers := t.TempDir()
	os.Chmod(helpers, 0o755)
	if out, err := exec.Command("go", "build", "-o", filepath.Join(helpers, kubeHelperName), "../nslab-kube").CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", kubeHelperName, err, out)
	}
	k.create(t, "../../deploy/kubernetes/crd.yaml")
	k.create(t, "../../deploy/kubernetes/agent.yaml", "DaemonSet")
	waitFor(t, "the Lab resource to be served", func() bool {
		code, _ := k.api("GET", "/apis/nslab.dev/v1alpha1/labs", adminToken, nil)
		return code == 200
	})
	t.Run("refuses strangers", func(t *testing.T) {
		k.api("POST", "/api/v1/namespaces/nslab-system/serviceaccounts", adminToken, []byte("metadata: {name: stranger}"))
		stranger := k.token(t, "nslab-system", "stranger")
		if code, body := k.api("GET", "/apis/nslab.dev/v1alpha1/labs", stranger, nil); code != 403 {
			t.Errorf("a ServiceAccount without the grant lists Labs: %d %s", code, body)
		}
		cmd := k.agent(t, s.hosts[1], k.kubeconfig(t, "stranger", stranger), helpers)
		err := cmd.Wait()
		log, _ := os.ReadFile(filepath.Join(k.dir, "agent-b.log"))
		if err == nil || !strings.Contains(string(log), "the API server refuses this agent the Lab resources") {
			t.Errorf("an agent without the grant: %v %s", err, log)
		}
	})
	agentConfig := k.kubeconfig(t, "nslab-agent", k.token(t, "nslab-system", "nslab-agent"))
	var agents []*exec.Cmd
	for _, h := range s.hosts {
		agents = append(agents, k.agent(t, h, agentConfig, helpers))
		k.node(t, h, h.name, h.name == "b")
	}
	file, name := sshLab(t, "three-hosts.yaml")
	userConfig := k.user(t)
	s.coord.env = append(s.coord.env, "KUBECONFIG="+userConfig, "PATH="+helpers+":"+os.Getenv("PATH"))
	t.Cleanup(func() { s.run("destroy", "--kubernetes", file) })
	for round := range 2 {
		k.deploy(t, file, name, "host b (node b): deployed, 1 nodes")
		if round == 0 {
			checkLabTable(t, k, name)
			if code, out, errOut := s.run("check", file); code != 0 || !strings.Contains(out, "4 pairs: 4 answered") {
				t.Errorf("check of the lab the agents built, over SSH: %d %s %s", code, out, errOut)
			}
			k.verbs(t, file, name, agentConfig)
			k.sameNameElsewhere(t, file, name, userConfig)
			if code, body := k.api("DELETE", "/apis/nslab.dev/v1alpha1/namespaces/default/labs/"+name, adminToken, nil); code != 200 {
				t.Fatalf("delete the Lab: %d %s", code, body)
			}
			waitFor(t, "the deleted Lab to be gone", func() bool {
				code, _ := k.api("GET", "/apis/nslab.dev/v1alpha1/namespaces/default/labs/"+name, adminToken, nil)
				return code == 404
			})
			k.assertNoShares(t)
			continue
		}
		k.destroy(t, file, name)
	}
	k.failedHost(t, file, name)
	agents = append(agents, k.placed(t, file, name, helpers, agentConfig))
	for _, a := range agents {
		k.stop(a)
	}
	for i := len(k.procs) - 1; i >= 0; i-- {
		k.stop(k.procs[i])
	}
	s.assertNothingLeft(t)
}

// sameNameElsewhere: with Lab default/NAME deployed, a Lab of the same
// name in namespace other is created from the same file (nslab deploy
// --kubernetes with a kubeconfig whose namespace is other). Every agent
// refuses to build it beside default/NAME's share (the shares are owned
// by the Lab's namespace, name and UID, not by the name alone), the deploy
// fails, and deleting other/NAME removes nothing: each agent takes its
// finalizer off without destroying, and default/NAME's shares all answer
// and its status stays Deployed.
func (k *cluster) sameNameElsewhere(t *testing.T, file, name, userConfig string) {
	t.Helper()
	if code, body := k.api("POST", "/api/v1/namespaces", adminToken, []byte("metadata: {name: other}")); code != 201 {
		t.Fatalf("create namespace other: %d %s", code, body)
	}
	cfg, err := os.ReadFile(userConfig)
	if err != nil {
		t.Fatal(err)
	}
	otherConfig := filepath.Join(k.dir, "other.kubeconfig")
	os.WriteFile(otherConfig, bytes.Replace(cfg, []byte("namespace: default"), []byte("namespace: other"), 1), 0o644)
	other := *k.s.coord
	other.env = append(slices.Clone(k.s.coord.env), "KUBECONFIG="+otherConfig)
	code, out, errOut := other.run("--ssh-config", k.s.sshConfig, "deploy", "--kubernetes", file)
	t.Logf("$ nslab deploy --kubernetes (namespace other)\n%s%s(exit %d)", out, errOut, code)
	if code == 0 || !strings.Contains(errOut, "another lab named "+name+" is deployed here") || out != "" {
		t.Errorf("deploy of Lab other/%s beside default/%s: %d %s %s", name, name, code, out, errOut)
	}
	k.api("DELETE", "/apis/nslab.dev/v1alpha1/namespaces/other/labs/"+name, adminToken, nil)
	waitFor(t, "Lab other/"+name+" to be gone", func() bool {
		code, _ := k.api("GET", "/apis/nslab.dev/v1alpha1/namespaces/other/labs/"+name, adminToken, nil)
		return code == 404
	})
	var lab labStatus
	_, body := k.api("GET", "/apis/nslab.dev/v1alpha1/namespaces/default/labs/"+name, adminToken, nil)
	json.Unmarshal(body, &lab)
	if lab.Status.Phase != "Deployed" || lab.Status.Ready != "3/3" {
		t.Errorf("Lab default/%s after other/%s came and went: %+v", name, name, lab.Status)
	}
	current := file // the file default/NAME was last applied from (verbs applies changed.yaml)
	if changed := filepath.Join(filepath.Dir(file), "changed.yaml"); fileExists(changed) {
		current = changed
	}
	if code, out, errOut := k.s.run("check", current); code != 0 || strings.Count(out, " 0 broken") != 3 {
		t.Errorf("default/%s's shares after other/%s came and went: check %d %s %s", name, name, code, out, errOut)
	}
}

// deploy runs nslab deploy --kubernetes file and checks that it says
// want and that the Lab's status has every host deployed with its plan.
func (k *cluster) deploy(t *testing.T, file, name, want string) {
	t.Helper()
	code, out, errOut := k.s.run("deploy", "--kubernetes", file)
	if code != 0 || !strings.Contains(out, "deployed lab "+name+" on hosts a, b, c as Lab default/"+name) || !strings.Contains(out, want) {
		t.Fatalf("deploy --kubernetes: %d %s %s", code, out, errOut)
	}
	var lab labStatus
	_, body := k.api("GET", "/apis/nslab.dev/v1alpha1/namespaces/default/labs/"+name, adminToken, nil)
	json.Unmarshal(body, &lab)
	for _, h := range []string{"a", "b", "c"} {
		if st := lab.Status.Hosts[h]; st.Phase != "Deployed" || st.PlanHash != lab.Spec.Plan.Hash || lab.Spec.Plan.Hash == "" {
			t.Errorf("host %s's status: %+v (plan %s)", h, st, lab.Spec.Plan.Hash)
		}
	}
	if lab.Status.Phase != "Deployed" || lab.Status.Ready != "3/3" {
		t.Errorf("the Lab's status: %+v", lab.Status)
	}
}

// destroy runs nslab destroy --kubernetes file: the Lab and every share
// are gone.
func (k *cluster) destroy(t *testing.T, file, name string) {
	t.Helper()
	code, out, errOut := k.s.run("destroy", "--kubernetes", file)
	if code != 0 || !strings.Contains(out, "destroyed lab "+name+": Lab default/"+name+" and every host's share removed") {
		t.Errorf("destroy --kubernetes: %d %s %s", code, out, errOut)
	}
	k.assertNoShares(t)
}

// failedHost: host c holds a device of the name its VXLAN would take (not
// the lab's), so its share fails; deploy --kubernetes says host c and the
// step, every host's share is taken back, c's device is untouched; with
// it gone the same deploy succeeds.
func (k *cluster) failedHost(t *testing.T, file, name string) {
	t.Helper()
	data, _ := os.ReadFile(file)
	l, err := spec.Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := fleet.NewPlan(data, l)
	if err != nil {
		t.Fatal(err)
	}
	squat := fmt.Sprintf("nslx%d", plan.Share("c").Tunnels[0].VNI)
	c := k.s.hosts[2]
	k.s.outIn(t, c, "ip", "link", "add", squat, "type", "bridge")
	code, out, errOut := k.s.run("deploy", "--kubernetes", file)
	t.Logf("$ nslab deploy --kubernetes (host c holding %s)\n%s%s(exit %d)", squat, out, errOut, code)
	if code == 0 || !strings.Contains(errOut, "host c: deploy: ") || !strings.Contains(errOut, "every share a host had built was taken back") || strings.Contains(out, "deployed") || strings.Contains(out, "destroyed") {
		t.Errorf("deploy with host c failing: %d %s %s", code, out, errOut)
	}
	if code, _ := k.api("GET", "/apis/nslab.dev/v1alpha1/namespaces/default/labs/"+name, adminToken, nil); code != 404 {
		t.Errorf("the failed deploy left its Lab: %d", code)
	}
	k.assertNoShares(t)
	if !strings.Contains(k.s.outIn(t, c, "ip", "-o", "link", "show", squat), squat) {
		t.Errorf("host c's own device %s went", squat)
	}
	k.s.outIn(t, c, "ip", "link", "del", squat)
	k.deploy(t, file, name, "host c (node c): deployed, 1 nodes")
	k.destroy(t, file, name)
}

// placed: host c of the lab placed by node_selector:, with no underlay:.
// Node b has the label but holds host b, so kn-c (host c's machine,
// 192.168.77.3, as its InternalIP says) is picked: the agent running as
// node kn-c builds c's share, and the lab answers check --kubernetes,
// which reaches host c's agent on node kn-c.
func (k *cluster) placed(t *testing.T, file, name, helpers, agentConfig string) *exec.Cmd {
	t.Helper()
	k.node(t, k.s.hosts[2], "kn-c", true)
	data, _ := os.ReadFile(file)
	unplaced := strings.Replace(string(data), "c: {underlay: 192.168.77.3, ssh: root@192.168.77.3}", "c: {node_selector: {nslab.dev/role: server}, ssh: root@192.168.77.3}", 1)
	if unplaced == string(data) {
		t.Fatalf("%s has no host c to place", file)
	}
	placedFile := filepath.Join(filepath.Dir(file), "placed.yaml")
	os.WriteFile(placedFile, []byte(unplaced), 0o644)
	if code, _, errOut := k.s.run("deploy", placedFile); code == 0 || !strings.Contains(errOut, "host c has no underlay") {
		t.Errorf("deploy over SSH of a host placed by labels: %d %s", code, errOut)
	}
	agent := k.agentAs(t, k.s.hosts[2], "kn-c", agentConfig, helpers)
	k.deploy(t, placedFile, name, "host c (node kn-c): deployed, 1 nodes")
	var lab struct{ Spec struct{ File string } }
	_, body := k.api("GET", "/apis/nslab.dev/v1alpha1/namespaces/default/labs/"+name, adminToken, nil)
	if json.Unmarshal(body, &lab); !strings.Contains(lab.Spec.File, "underlay: 192.168.77.3") {
		t.Errorf("the placed file has no underlay of kn-c:\n%s", lab.Spec.File)
	}
	if code, out, errOut := k.s.run("check", "--kubernetes", placedFile); code != 0 || !strings.Contains(out, "host c:\n") || !strings.Contains(out, "4 pairs: 4 answered") {
		t.Errorf("check of the placed lab, host c's agent reached on node kn-c: %d %s %s", code, out, errOut)
	}
	k.destroy(t, placedFile, name)
	return agent
}

// checkLabTable: the API server's table of Labs, what kubectl get labs
// prints, has the lab with 3 hosts, 3/3 ready, Deployed.
func checkLabTable(t *testing.T, k *cluster, name string) {
	t.Helper()
	out, err := exec.Command("nsenter", "-t", strconv.Itoa(k.s.hosts[0].holder.Process.Pid), "-n", "curl", "-sk", "-H", "Authorization: Bearer "+adminToken,
		"-H", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io", "https://192.168.77.1:6443/apis/nslab.dev/v1alpha1/namespaces/default/labs").Output()
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		ColumnDefinitions []struct{ Name string }
		Rows              []struct{ Cells []any }
	}
	json.Unmarshal(out, &table)
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if len(table.Rows) != 1 || strings.Join(cols[:4], " ") != "Name Hosts Ready Phase" || fmt.Sprint(table.Rows[0].Cells[:4]) != fmt.Sprintf("[%s 3 3/3 Deployed]", name) {
		t.Errorf("kubectl get labs would show %v %v", cols, table.Rows)
	}
}

// assertNoShares: no host holds a named namespace or nslab state.
func (k *cluster) assertNoShares(t *testing.T) {
	t.Helper()
	for _, h := range k.s.hosts {
		if got := strings.Fields(k.s.outIn(t, h, "sh", "-c", "ls -A /run/netns; ls -A /run/nslab 2>/dev/null | grep -v '^lock$' ; true")); len(got) > 0 {
			t.Errorf("host %s holds %v", h.name, got)
		}
	}
}

// node makes h's machine the Kubernetes node name: a Node whose
// InternalIP is h's address and whose kubelet listens there on 10250
// (labelled nslab.dev/role=server when server), the agent's pod bound to
// it as the DaemonSet would make it, and that kubelet (serveKubelet) in
// h's namespaces, started once per machine.
func (k *cluster) node(t *testing.T, h *sshHost, name string, server bool) {
	t.Helper()
	labels := ""
	if server {
		labels = ", labels: {nslab.dev/role: server}"
	}
	n := fmt.Sprintf(`{kind: Node, apiVersion: v1, metadata: {name: %s%s}, status: {addresses: [{type: InternalIP, address: %s}], daemonEndpoints: {kubeletEndpoint: {Port: 10250}}}}`, name, labels, h.addr)
	if code, body := k.api("POST", "/api/v1/nodes", adminToken, []byte(n)); code != 201 {
		t.Fatalf("create node %s: %d %s", name, code, body)
	}
	k.agentPod(t, name)
	if name != h.name {
		return // the host's kubelet serves it already
	}
	cmd := exec.Command("nsenter", "-t", strconv.Itoa(h.holder.Process.Pid), "-m", "-n", "env", kubeletEnv+"="+h.addr+":10250", "TMPDIR="+h.tmp, "HOME=/root", os.Args[0])
	log, _ := os.Create(filepath.Join(k.dir, "kubelet-"+name+".log"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k.procs = append(k.procs, cmd)
	t.Cleanup(func() { k.stop(cmd) })
}

// agentPod is the agent's pod on node, as the DaemonSet makes it (no
// controller manager runs here).
func (k *cluster) agentPod(t *testing.T, node string) {
	t.Helper()
	pod := fmt.Sprintf(`{kind: Pod, apiVersion: v1, metadata: {name: nslab-agent-%s, namespace: nslab-system, labels: {app.kubernetes.io/name: nslab-agent}}, spec: {nodeName: %s, serviceAccountName: nslab-agent, hostNetwork: true, hostPID: true, containers: [{name: agent, image: "nslab:latest", command: [nslab, agent, --kubernetes], securityContext: {privileged: true}}]}}`, node, node)
	if code, body := k.api("POST", "/api/v1/namespaces/nslab-system/pods", adminToken, []byte(pod)); code != 201 {
		t.Fatalf("create the agent's pod on %s: %d %s", node, code, body)
	}
}

// verbs: the verbs other than deploy and destroy on the lab deployed as
// a Lab, with --kubernetes: each host's agent reached through the API
// server's pods/exec into the agent's pod on its node, none over SSH;
// apply changes the Lab, and the verbs then see the lab it holds, given
// its file (the file before refused); an apply that fails on a host puts
// the Lab's previous spec back.
// Without a pod on a node, the verb names the host and why; a user the
// API server does not let exec into pods (the agent's own
// ServiceAccount) is refused.
func (k *cluster) verbs(t *testing.T, file, name, agentConfig string) {
	t.Helper()
	for _, v := range []struct {
		args []string
		want []string
	}{
		{[]string{"check", "--kubernetes", file}, []string{"host a:\n", "host c:\n", "4 pairs: 4 answered"}},
		{[]string{"path", "--kubernetes", file, "client", "10.1.2.1"}, []string{"on host a:", "router on host b"}},
		{[]string{"inspect", "--kubernetes", file}, []string{"host b:\n", "router"}},
		{[]string{"bench", "--kubernetes", "-q", "--count", "5000", file}, []string{"on host a:", "+ unaccounted 0", "router:eth0 (host b)", "server:eth0 (host c)"}},
		{[]string{"node", "--kubernetes", "-t", file, "stop", "router"}, []string{"on host b:\n", name + ":router stopped"}},
		{[]string{"node", "--kubernetes", "-t", file, "start", "router"}, []string{"on host b:\n", name + ":router started"}},
		{[]string{"check", "--kubernetes", "--wait", "10s", file}, []string{"4 pairs: 4 answered"}},
		{[]string{"top", "--kubernetes", "--once", file}, []string{"host a:\n", "host b:\n", "router "}},
	} {
		code, out, errOut := k.s.run(v.args...)
		for _, want := range v.want {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("%s: no %q in %d %s %s", strings.Join(v.args, " "), want, code, out, errOut)
				break
			}
		}
	}
	for _, h := range []string{"a", "b", "c"} { // the way the verbs came: the kubelet of each host's node
		log, _ := os.ReadFile(filepath.Join(k.dir, "kubelet-"+h+".log"))
		first, _, _ := strings.Cut(string(log), "\n")
		if !strings.HasPrefix(first, "exec in nslab-system/nslab-agent-"+h+" agent over ") {
			t.Errorf("host %s's kubelet was asked no exec in the agent's pod: %q", h, first)
		}
		t.Logf("host %s's kubelet: %s", h, first)
	}
	data, _ := os.ReadFile(file)
	changed := filepath.Join(filepath.Dir(file), "changed.yaml")
	os.WriteFile(changed, bytes.Replace(data, []byte("eth1: {addresses: [10.1.2.254/24]}"), []byte("eth1: {addresses: [10.1.2.254/24, 10.1.3.254/24]}"), 1), 0o644)
	if code, out, errOut := k.s.run("apply", "--kubernetes", changed); code != 0 || !strings.Contains(out, "applied lab "+name+" on hosts a, b, c as Lab default/"+name) {
		t.Errorf("apply --kubernetes: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := k.s.run("inspect", "--kubernetes", changed); code != 0 || !strings.Contains(out, "10.1.2.254/24, 10.1.3.254/24") {
		t.Errorf("inspect --kubernetes after the apply: the lab as its Lab holds it, with router:eth1's new address: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := k.s.run("inspect", "--kubernetes", file); code == 0 || !strings.Contains(errOut, file+" is not the file Lab default/"+name+" was deployed from") {
		t.Errorf("inspect --kubernetes given the file before the apply: %d %s %s", code, out, errOut)
	}
	k.failedApply(t, changed)
	if code, _ := k.api("DELETE", "/api/v1/namespaces/nslab-system/pods/nslab-agent-c", adminToken, nil, "gracePeriodSeconds=0"); code != 200 {
		t.Fatalf("delete the agent's pod on c: %d", code)
	}
	code, out, errOut := k.s.run("check", "--kubernetes", changed)
	if code == 0 || !strings.Contains(errOut, "host c: reach the agent: kubernetes node c: ") || !strings.Contains(errOut, "node c runs no nslab agent") {
		t.Errorf("check with no agent's pod on node c: %d %s %s", code, out, errOut)
	}
	k.agentPod(t, "c")
	env := k.s.coord.env
	k.s.coord.env = append(slices.Clone(env), "KUBECONFIG="+agentConfig)
	code, out, errOut = k.s.run("check", "--kubernetes", changed)
	k.s.coord.env = env
	if code == 0 || !strings.Contains(errOut, `cannot list resource "pods"`) {
		t.Errorf("check as the agent's ServiceAccount, which may not exec into pods: %d %s %s", code, out, errOut)
	}
}

// failedApply: a change that adds node server2 on host c, whose
// namespace's name host c already holds (not the lab's), fails on host c
// (and is undone there); the Lab goes back to the spec of changed (the
// lab deployed before), which every host runs again, with c's namespace
// untouched.
func (k *cluster) failedApply(t *testing.T, changed string) {
	t.Helper()
	data, _ := os.ReadFile(changed)
	l, err := spec.Parse(changed, data)
	if err != nil {
		t.Fatal(err)
	}
	grown := strings.Replace(string(data), "\nlinks:\n", "\n  server2: {host: c}\nlinks:\n", 1)
	bad := filepath.Join(filepath.Dir(changed), "grown.yaml")
	os.WriteFile(bad, []byte(grown), 0o644)
	squat := l.Name + "-server2"
	c := k.s.hosts[2]
	k.s.outIn(t, c, "ip", "netns", "add", squat)
	code, out, errOut := k.s.run("apply", "--kubernetes", bad)
	if code == 0 || !strings.Contains(errOut, "host c: apply: ") || !strings.Contains(errOut, "the Lab is back to its previous spec, which every host runs again") {
		t.Errorf("apply failing on host c: %d %s %s", code, out, errOut)
	}
	code, out, errOut = k.s.run("inspect", "--kubernetes", changed)
	if code != 0 || !strings.Contains(out, "10.1.2.254/24, 10.1.3.254/24") || strings.Contains(out, "server2") {
		t.Errorf("inspect after the failed apply: not the lab as before: %d %s %s", code, out, errOut)
	}
	if !strings.Contains(k.s.outIn(t, c, "ip", "netns", "list"), squat) {
		t.Errorf("host c's own namespace %s went", squat)
	}
	k.s.outIn(t, c, "ip", "netns", "del", squat)
}
