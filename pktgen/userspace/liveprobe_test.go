package userspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDiagnose: a refusal is the process's own when it lacks CAP_BPF (and
// CAP_SYS_ADMIN) or CAP_NET_ADMIN, and the machine's policy otherwise,
// naming a seccomp filter and BPF LSM programs when it can see them.
func TestDiagnose(t *testing.T) {
	const root = 0x000001ffffffffff
	for _, tc := range []struct {
		name   string
		st     procStatus
		lsm    []string
		policy bool
		want   string
	}{
		{"no CAP_NET_ADMIN", procStatus{capEff: root &^ (1 << capNetAdmin)}, nil, false, "lacks CAP_BPF and CAP_NET_ADMIN"},
		{"neither CAP_BPF nor CAP_SYS_ADMIN", procStatus{capEff: root &^ (1<<capBPF | 1<<capSysAdmin)}, nil, false, "run as root"},
		{"CAP_SYS_ADMIN without CAP_BPF", procStatus{capEff: root &^ (1 << capBPF)}, nil, true, "neither a seccomp filter nor a BPF LSM program is visible"},
		{"seccomp", procStatus{capEff: root, seccomp: 2, filters: 3}, nil, true, "a seccomp filter (Seccomp 2, 3 filters"},
		{"lsm", procStatus{capEff: root}, []string{"deny_bpf (id 7)"}, true, "BPF LSM programs are loaded (deny_bpf (id 7))"},
		{"strict", procStatus{capEff: root, seccomp: 1}, nil, true, "seccomp's strict mode"},
	} {
		e := diagnose(unix.EPERM, tc.st, tc.lsm)
		if e.Policy != tc.policy || !strings.Contains(e.Cause, tc.want) || errors.Is(e, ErrLiveFramesRefused) != tc.policy || !errors.Is(e, unix.EPERM) {
			t.Errorf("%s: %+v (policy %v), want policy %v and %q", tc.name, e, e.Policy, tc.policy, tc.want)
		}
		if !strings.Contains(e.Error(), "returned EPERM (operation not permitted)") {
			t.Errorf("%s: %q does not name the errno", tc.name, e.Error())
		}
	}
}

// TestReadStatus reads a /proc/PID/status of a process under a seccomp
// filter (a copy of the kernel's format).
func TestReadStatus(t *testing.T) {
	path := filepath.Join(t.TempDir(), "status")
	text := "Name:\tnslab\nCapEff:\t000001fffeffffff\nNoNewPrivs:\t0\nSeccomp:\t2\nSeccomp_filters:\t1\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := readStatus(path)
	if err != nil || st != (procStatus{seccomp: 2, filters: 1, capEff: 0x1fffeffffff}) {
		t.Fatalf("%+v, %v", st, err)
	}
	if _, err := readStatus(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing file read without an error")
	}
}

// TestRefusalOnlyForPermission: only EPERM and EACCES are refusals.
func TestRefusalOnlyForPermission(t *testing.T) {
	if refusal(unix.EINVAL) != nil || refusal(errors.New("other")) != nil {
		t.Error("a refusal made of EINVAL or a plain error")
	}
	var r *LiveRefusedError
	if !errors.As(refusal(unix.EACCES), &r) || r.Errno != unix.EACCES {
		t.Errorf("EACCES: %v", r)
	}
}
