// Command nslab-capture writes the frames of a packet socket as pcap. nslab
// capture opens the socket inside a lab node, bound to one interface, and
// runs this program with it as file descriptor 3; it is a program of its
// own because the pcap writer it links (gopacket) costs milliseconds of
// initialisation that every nslab command would otherwise pay.
//
//	nslab-capture -w FILE|- [-c N] [-snaplen N] [-what NODE:IF]  (socket on fd 3)
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/nslab/nslab/topology/capture"
)

func main() {
	out := flag.String("w", "", "pcap file to write, - for standard output")
	count := flag.Int("c", 0, "stop after this many frames (0: until interrupted)")
	snaplen := flag.Int("snaplen", 262144, "bytes kept of each frame")
	what := flag.String("what", "the interface", "what is captured, for messages")
	flag.Parse()
	if *out == "" || *snaplen < 1 || *count < 0 {
		fmt.Fprintln(os.Stderr, "usage: nslab-capture -w FILE|- [-c N] [-snaplen N] (run by nslab capture, with the socket on fd 3)")
		os.Exit(2)
	}
	n, drops, err := run(os.NewFile(3, "packet socket"), *out, *count, *snaplen)
	msg := fmt.Sprintf("nslab capture: %d frame(s) captured on %s", n, *what)
	if drops > 0 {
		msg += fmt.Sprintf(", %d dropped by the kernel (the socket's buffer was full)", drops)
	}
	fmt.Fprintln(os.Stderr, msg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nslab capture:", err)
		os.Exit(1)
	}
}

// run copies frames from the socket to the pcap file until count frames,
// SIGINT or SIGTERM, and returns how many it wrote and the kernel dropped.
func run(sock *os.File, path string, count, snaplen int) (int, uint32, error) {
	var w io.Writer = os.Stdout
	if path != "-" {
		f, err := os.Create(path)
		if err != nil {
			return 0, 0, err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	pw := pcapgo.NewWriter(bw)
	if err := pw.WriteFileHeader(uint32(snaplen), layers.LinkTypeEthernet); err != nil {
		return 0, 0, err
	}
	if err := bw.Flush(); err != nil { // a reader on a pipe sees the header at once
		return 0, 0, err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	r := capture.NewReader(sock, snaplen)
	n := 0
	for count == 0 || n < count {
		select {
		case <-stop:
			return n, drops(r), bw.Flush()
		default:
		}
		f, err := r.Next(100 * time.Millisecond)
		if errors.Is(err, capture.ErrTimeout) {
			continue
		}
		if err != nil {
			return n, drops(r), errors.Join(err, bw.Flush())
		}
		ci := gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(f.Data), Length: f.Length}
		if err := pw.WritePacket(ci, f.Data); err != nil {
			return n, drops(r), err
		}
		n++
		if path == "-" { // each frame reaches a pipe (wireshark -k -i -) as it comes
			if err := bw.Flush(); err != nil {
				return n, drops(r), err
			}
		}
	}
	return n, drops(r), bw.Flush()
}

func drops(r *capture.Reader) uint32 {
	d, _ := r.Drops() // a count only; unreadable statistics say nothing was dropped
	return d
}
