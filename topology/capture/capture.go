// Package capture reads the frames that cross a lab interface, both ways,
// as tcpdump sees them: from an AF_PACKET socket opened on a thread inside
// the interface's node and bound to the interface, with the kernel's
// receive timestamp of each frame. It writes no file format: nslab-capture
// writes pcap (it links a pcap writer whose package initialisation would
// slow every nslab command); nslab opens the socket, in the node, and
// hands it over.
package capture

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"
	"unsafe"

	"github.com/nslab/nslab/topology/ns"
	"golang.org/x/sys/unix"
)

// Open opens a packet socket bound to interface ifname of namespace n,
// receiving every frame it sends and receives, timestamped by the kernel.
// It runs on a thread inside n; the socket works from anywhere afterwards.
// The caller closes the file.
func Open(n *ns.NS, ifname string) (*os.File, error) {
	var fd int
	err := n.Do(func() error {
		ifc, err := net.InterfaceByName(ifname)
		if err != nil {
			return fmt.Errorf("interface %s in %s: %w", ifname, n.Name, err)
		}
		// Protocol 0: the socket receives nothing until it is bound to
		// the interface, so no other interface's frame slips in.
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("packet socket in %s: %w", n.Name, err)
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifc.Index}); err != nil {
			unix.Close(fd)
			return fmt.Errorf("bind a packet socket to %s in %s: %w", ifname, n.Name, err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			unix.Close(fd)
			return fmt.Errorf("timestamps on the packet socket: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "packet socket on "+n.Name+":"+ifname), nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Frame is one captured frame.
type Frame struct {
	Time   time.Time // when the kernel took it
	Data   []byte    // the first snaplen bytes; valid until the next Next
	Length int       // its whole length on the wire (without FCS)
}

// Reader reads frames from a packet socket Open made.
type Reader struct {
	fd      int
	snaplen int
	buf     []byte
	oob     []byte
}

// NewReader reads frames from f, keeping at most snaplen bytes of each.
func NewReader(f *os.File, snaplen int) *Reader {
	return &Reader{fd: int(f.Fd()), snaplen: snaplen, buf: make([]byte, max(snaplen, 1)), oob: make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))}
}

// ErrTimeout is returned by Next when no frame came within its timeout.
var ErrTimeout = errors.New("no frame")

// Next waits up to timeout for the next frame.
func (r *Reader) Next(timeout time.Duration) (Frame, error) {
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(r.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return Frame{}, err
	}
	for {
		n, oobn, _, _, err := unix.Recvmsg(r.fd, r.buf, r.oob, unix.MSG_TRUNC)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return Frame{}, ErrTimeout
		case err != nil:
			return Frame{}, fmt.Errorf("read the packet socket: %w", err)
		}
		f := Frame{Time: time.Now(), Length: n, Data: r.buf[:min(n, len(r.buf))]}
		if msgs, err := unix.ParseSocketControlMessage(r.oob[:oobn]); err == nil {
			for _, m := range msgs {
				if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
					ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
					f.Time = time.Unix(ts.Unix())
				}
			}
		}
		return f, nil
	}
}

// Drops is how many frames the kernel dropped because the socket's buffer
// was full, since the last call (PACKET_STATISTICS).
func (r *Reader) Drops() (uint32, error) {
	st, err := unix.GetsockoptTpacketStats(r.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return 0, err
	}
	return st.Drops, nil
}
