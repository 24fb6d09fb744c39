package auto

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/nslab/nslab/internal/labtest"
	"github.com/nslab/nslab/pktgen/userspace"
	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// TestChooseXDP: engine xdp is the XDP engine when the live-frame probe
// passes, the userspace engine with the probe's words when the machine's
// policy refuses it, and an error naming the sender for any other
// failure (a process without the capabilities is not a policy).
func TestChooseXDP(t *testing.T) {
	refused := &userspace.LiveRefusedError{Errno: unix.EPERM, Cause: "a seccomp filter (Seccomp 2, 1 filters, in /proc/self/status) may refuse bpf(2) calls", Policy: true}
	noCaps := &userspace.LiveRefusedError{Errno: unix.EPERM, Cause: "this process lacks CAP_BPF and CAP_NET_ADMIN"}
	sender := &ns.NS{Name: "lab-ns1"}
	for _, tc := range []struct {
		probe      error
		want       string
		reason     string
		errPattern string
	}{
		{nil, userspace.XDPName, "asked for", ""},
		{refused, userspace.Name, "the XDP engine was asked for, but the kernel refuses BPF_PROG_RUN with live frames (bpf(BPF_PROG_TEST_RUN) returned EPERM (operation not permitted)): " + refused.Cause + "; so the userspace engine (AF_PACKET) ran", ""},
		{noCaps, "", "", "XDP engine in lab-ns1: the kernel refuses"},
		{errors.New("load the live-frame probe: invalid argument"), "", "", "XDP engine in lab-ns1: load the live-frame probe"},
	} {
		c := Chooser{LiveProbe: func(n *ns.NS) error {
			if n != sender {
				t.Errorf("probed %v, want the sender", n)
			}
			return tc.probe
		}}
		eng, reason, err := c.Choose("xdp", sender)
		if tc.errPattern != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errPattern) {
				t.Errorf("probe %v: engine %v, error %v; want an error with %q", tc.probe, eng, err, tc.errPattern)
			}
			continue
		}
		if err != nil || eng.Name() != tc.want || reason != tc.reason {
			t.Errorf("probe %v: %v, %q, %v; want %s, %q", tc.probe, eng, reason, err, tc.want, tc.reason)
		}
	}
}

// seccompChild is the environment variable that makes the test binary
// the child of TestPrivilegedXDPRefusedFallsBack.
const seccompChild = "NSLAB_TEST_SECCOMP_CHILD"

// TestPrivilegedXDPRefusedFallsBack: a kernel that refuses the live-frame
// call for real. A child process of this test installs a seccomp filter
// that makes bpf(BPF_PROG_TEST_RUN) return EPERM (as the sandbox of a
// new machine of ours did, by whatever means), then probes and chooses:
// the probe names the seccomp filter as the cause and matches
// ErrLiveFramesRefused, and engine xdp falls back to the userspace engine
// saying so in one line. Here, without the filter, the probe passes.
func TestPrivilegedXDPRefusedFallsBack(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	if os.Getenv(seccompChild) == "1" {
		refusedChild(t)
		return
	}
	if _, ok := seccompArch[runtime.GOARCH]; !ok {
		t.Skipf("no seccomp filter written for %s", runtime.GOARCH)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPrivilegedXDPRefusedFallsBack$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), seccompChild+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("the child under seccomp:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestPrivilegedXDPRefusedFallsBack") {
		t.Fatalf("the child failed (%v)", err)
	}
}

// refusedChild is the child's half: it refuses BPF_PROG_TEST_RUN to
// itself, then checks the probe and the choice.
func refusedChild(t *testing.T) {
	n := labtest.OpenNamespace(t, labtest.NetnsDir(t))
	if err := denyProgRun(); err != nil {
		t.Fatalf("install the seccomp filter: %v", err)
	}
	err := n.Do(userspace.ProbeLiveFrames)
	var refused *userspace.LiveRefusedError
	if !errors.As(err, &refused) || !errors.Is(err, userspace.ErrLiveFramesRefused) || !errors.Is(err, unix.EPERM) || !strings.Contains(refused.Cause, "a seccomp filter (Seccomp 2") {
		t.Fatalf("probe under seccomp: %v; want a policy refusal with EPERM naming the seccomp filter", err)
	}
	eng, reason, err := Chooser{}.Choose("xdp", n)
	if err != nil || eng.Name() != userspace.Name || !strings.Contains(reason, refused.Error()) || strings.Contains(reason, "\n") {
		t.Fatalf("choose xdp under seccomp: %v, %q, %v; want the userspace engine with the refusal in one line", eng, reason, err)
	}
	t.Logf("engine %s: %s", eng.Name(), reason)
}

// seccompArch is the audit architecture of a seccomp filter's data.
var seccompArch = map[string]uint32{"amd64": 0xc000003e, "arm64": 0xc00000b7}

// denyProgRun installs, on every thread of this process, a seccomp filter
// that makes bpf(2) return EPERM for BPF_PROG_TEST_RUN and allows every
// other call.
func denyProgRun() error {
	const (
		retAllow = 0x7fff0000 // SECCOMP_RET_ALLOW
		retErrno = 0x00050000 // SECCOMP_RET_ERRNO
		ldAbsW   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeqK     = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		retK     = unix.BPF_RET | unix.BPF_K
		progRun  = unix.BPF_PROG_TEST_RUN // bpf(2)'s cmd, its first argument
	)
	filter := []unix.SockFilter{
		{Code: ldAbsW, K: 4}, // seccomp_data.arch
		{Code: jeqK, Jf: 4, K: seccompArch[runtime.GOARCH]},
		{Code: ldAbsW, K: 0}, // seccomp_data.nr
		{Code: jeqK, Jf: 2, K: unix.SYS_BPF},
		{Code: ldAbsW, K: 16}, // the low word of seccomp_data.args[0]
		{Code: jeqK, Jt: 1, K: progRun},
		{Code: retK, K: retAllow},
		{Code: retK, K: retErrno | uint32(unix.EPERM)},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %w", errno)
	}
	return nil
}
