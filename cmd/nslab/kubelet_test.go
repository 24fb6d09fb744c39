package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// kubeletEnv makes this test binary a node's kubelet for pods/exec
// (serveKubelet), listening at its value.
const kubeletEnv = "NSLAB_TEST_KUBELET"

// serveKubelet is the kubelet of a simulated host, for pods/exec only.
// There is no kubelet or container runtime on this machine, so this one
// boundary is a stand-in: the API server's exec requests for the agent's
// pod on the host's node come here, over TLS as to a kubelet, and are
// served by the kubelet's own streaming code (k8s.io/cri-streaming); the
// command runs in the host's namespaces, as the agent's privileged,
// hostNetwork, hostPID container runs it. What comes before (nslab-kube's
// client-go, the API server's authorization, its proxy to the node's
// address and port) is the real path.
func serveKubelet(addr string) int {
	cert, err := selfSigned()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		opts, err := remotecommand.NewOptions(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(os.Stderr, "exec in %s/%s %s over %s (%s): %q\n", r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container"),
			r.Header.Get("Upgrade"), strings.Join(r.Header.Values("X-Stream-Protocol-Version"), ", "), r.URL.Query()["command"])
		remotecommand.ServeExec(w, r, hostExec{}, r.PathValue("pod"), "", r.PathValue("container"), r.URL.Query()["command"], opts,
			time.Hour, 30*time.Second, remotecommand.SupportedStreamingProtocols)
	})
	srv := &http.Server{Addr: addr, Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}} // HTTP/1.1: the streams are upgrades
	fmt.Fprintln(os.Stderr, srv.ListenAndServeTLS("", ""))
	return 1
}

// hostExec runs a container's command in this process's namespaces.
type hostExec struct{}

func (hostExec) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader, out, errOut io.WriteCloser, _ bool, _ <-chan remotecommand.TerminalSize, _ time.Duration) error {
	if len(cmd) == 0 {
		return errors.New("no command")
	}
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	c.Stdin, c.Stdout, c.Stderr = in, out, errOut
	c.WaitDelay = time.Second // the stream's input is not closed when the command ends
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	c.Env = []string{"NSLAB_RUN_MAIN=1"} // this test binary, copied as the agent, is nslab
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, kubeletEnv+"=") {
			c.Env = append(c.Env, kv)
		}
	}
	err := c.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return utilexec.CodeExitError{Err: err, Code: ee.ExitCode()}
	}
	return err
}

// selfSigned is a certificate of the kubelet's own: the API server checks
// none when it is given no CA for the kubelets.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubelet"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
