package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// DefaultDir is the pktgen proc directory as seen from a thread inside the
// sender's namespace. /proc/net would be the namespace of the process's
// main thread, not of the thread doing the work.
const DefaultDir = "/proc/thread-self/net/pktgen"

// procFiles is the pktgen proc directory as the controller uses it. The
// real one is files under a directory; tests replace it with a fake that
// answers as the kernel does.
type procFiles interface {
	// list returns the file names; an error wrapping os.ErrNotExist
	// when pktgen is not there.
	list() ([]string, error)
	// write writes one command in one write() call.
	write(file, cmd string) error
	read(file string) (string, error)
}

// dirFiles is procFiles on a real directory. Its methods must run on a
// thread inside the namespace when the directory is under /proc/thread-self.
type dirFiles struct{ dir string }

var _ procFiles = dirFiles{}

func (d dirFiles) list() ([]string, error) {
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

// write ends the command with a newline, as echo does: pgctrl cuts the last
// byte of every write ("reset" without it arrives as "rese": EINVAL).
func (d dirFiles) write(file, cmd string) error {
	f, err := os.OpenFile(filepath.Join(d.dir, file), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(cmd + "\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return explainErrno(err)
}

func (d dirFiles) read(file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(d.dir, file))
	return string(b), err
}

// errENOTSUPP is the kernel-internal ENOTSUPP (524) that pktgen returns
// for clone_skb and burst on devices that cannot share skbs.
const errENOTSUPP = syscall.Errno(524)

// explainErrno names the errnos pktgen returns that have no text in libc.
func explainErrno(err error) error {
	if errors.Is(err, errENOTSUPP) {
		return fmt.Errorf("%w (ENOTSUPP: the device or xmit_mode does not support it)", err)
	}
	return err
}
