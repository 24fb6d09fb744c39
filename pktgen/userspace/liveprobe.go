package userspace

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// ErrLiveFramesRefused marks a kernel that refuses the XDP engine's
// BPF_PROG_RUN with live frames to a process that holds what the call
// needs: the machine's policy (a seccomp filter, an LSM's bpf hook), not
// nslab's input. Callers fall back to the AF_PACKET engine,
// and tests skip on it.
var ErrLiveFramesRefused = errors.New("the kernel refuses BPF_PROG_RUN with live frames")

// LiveRefusedError is the probe's finding when the live-frame run was
// refused: the errno the bpf(2) call returned and what this process could
// see of the cause.
type LiveRefusedError struct {
	Errno unix.Errno
	// Cause names what refused: the capabilities missing, the seccomp
	// filter, the BPF LSM programs loaded, or that none is visible here.
	Cause string
	// Policy is true when the process holds the capabilities the call
	// needs, so the refusal is the machine's (it wraps
	// ErrLiveFramesRefused); false when it lacks them (run as root).
	Policy bool
}

func (e *LiveRefusedError) Error() string {
	return fmt.Sprintf("the kernel refuses BPF_PROG_RUN with live frames (bpf(BPF_PROG_TEST_RUN) returned %s): %s", errnoName(e.Errno), e.Cause)
}

// Unwrap makes a policy refusal match ErrLiveFramesRefused and every
// refusal match its errno.
func (e *LiveRefusedError) Unwrap() []error {
	if e.Policy {
		return []error{ErrLiveFramesRefused, e.Errno}
	}
	return []error{e.Errno}
}

// ProbeLiveFrames runs a program that drops its one frame through
// BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES, the XDP engine's call:
// nothing is sent. It runs on the calling thread, in whatever network
// namespace that thread is in (the frame is the loopback device's there).
// It returns nil when the kernel runs it, a *LiveRefusedError when the
// kernel refuses it (EPERM or EACCES), or another error.
func ProbeLiveFrames() error {
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "nslab_probe", Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, xdpDrop), asm.Return()}})
	if err != nil {
		if refused := refusal(err); refused != nil {
			return refused
		}
		return fmt.Errorf("load the live-frame probe: %w", err)
	}
	defer func() { _ = p.Close() }() // a probe that will not close goes with the process
	frame := make([]byte, 64)
	_, err = p.Run(&ebpf.RunOptions{Data: frame, Repeat: 1, Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES, BatchSize: 1})
	if err == nil {
		return nil
	}
	if refused := refusal(err); refused != nil {
		return refused
	}
	return fmt.Errorf("run the live-frame probe: %w", err)
}

// xdpDrop is XDP_DROP: the probe's frame goes nowhere.
const xdpDrop = 1

// refusal is err as a *LiveRefusedError when it is EPERM or EACCES, with
// the cause this process can see; nil for any other error.
func refusal(err error) error {
	var errno unix.Errno
	switch {
	case errors.Is(err, unix.EPERM):
		errno = unix.EPERM
	case errors.Is(err, unix.EACCES):
		errno = unix.EACCES
	default:
		return nil
	}
	st, _ := readStatus("/proc/self/status") // a missing file leaves every cause unseen
	return diagnose(errno, st, bpfLSMPrograms())
}

// procStatus is what /proc/self/status says of the refusal's possible
// causes: the seccomp mode, and the effective capabilities.
type procStatus struct {
	seccomp int // 0 none, 1 strict, 2 filter
	filters int
	capEff  uint64
}

// Capability bits the live-frame run needs: CAP_BPF (or CAP_SYS_ADMIN)
// to load the program, CAP_NET_ADMIN for an XDP program.
const (
	capNetAdmin = 12
	capSysAdmin = 21
	capBPF      = 39
)

// diagnose names the cause of a refusal from what was read: capabilities
// the process lacks are its own fault; a seccomp filter and BPF LSM
// programs are the machine's policy. (Lockdown is not named: neither of
// its modes refuses a program run.)
func diagnose(errno unix.Errno, st procStatus, lsm []string) *LiveRefusedError {
	has := func(bit uint) bool { return st.capEff&(1<<bit) != 0 }
	if !has(capNetAdmin) || !has(capBPF) && !has(capSysAdmin) {
		return &LiveRefusedError{Errno: errno, Cause: fmt.Sprintf("this process lacks CAP_BPF and CAP_NET_ADMIN (CapEff %016x): run as root", st.capEff)}
	}
	var seen []string
	switch st.seccomp {
	case 2:
		seen = append(seen, fmt.Sprintf("a seccomp filter (Seccomp 2, %d filters, in /proc/self/status) may refuse bpf(2) calls", st.filters))
	case 1:
		seen = append(seen, "this process runs in seccomp's strict mode")
	}
	if len(lsm) > 0 {
		seen = append(seen, fmt.Sprintf("BPF LSM programs are loaded (%s) and may refuse bpf(2) calls", strings.Join(lsm, ", ")))
	}
	cause := "the process holds CAP_BPF and CAP_NET_ADMIN, so the machine's security policy refused it (an LSM's bpf hook, or a seccomp filter of the sandbox); neither a seccomp filter nor a BPF LSM program is visible from here"
	if len(seen) > 0 {
		cause = "the process holds CAP_BPF and CAP_NET_ADMIN, so the machine's security policy refused it: " + strings.Join(seen, "; ")
	}
	return &LiveRefusedError{Errno: errno, Cause: cause, Policy: true}
}

// readStatus reads the seccomp mode and effective capabilities of a
// /proc/PID/status file.
func readStatus(path string) (procStatus, error) {
	var st procStatus
	f, err := os.Open(path)
	if err != nil {
		return st, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Seccomp":
			st.seccomp, _ = strconv.Atoi(v) // a field the kernel did not write stays 0
		case "Seccomp_filters":
			st.filters, _ = strconv.Atoi(v)
		case "CapEff":
			st.capEff, _ = strconv.ParseUint(v, 16, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("read %s: %w", path, err)
	}
	return st, nil
}

// bpfLSMPrograms names the loaded BPF programs of type LSM (their names
// and IDs); none when the kernel lists none or will not list them.
func bpfLSMPrograms() []string {
	var names []string
	id := ebpf.ProgramID(0)
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return names
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		info, err := p.Info()
		_ = p.Close() // only its info was wanted
		if err == nil && info.Type == ebpf.LSM {
			names = append(names, fmt.Sprintf("%s (id %d)", info.Name, id))
		}
	}
}

// errnoName is EPERM for unix.EPERM: the name strace shows.
func errnoName(e unix.Errno) string {
	if name := unix.ErrnoName(e); name != "" {
		return fmt.Sprintf("%s (%v)", name, error(e))
	}
	return e.Error()
}
