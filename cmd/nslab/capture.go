package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"github.com/nslab/nslab/topology/capture"
	"github.com/nslab/nslab/topology/lab"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// captureHelperName writes the pcap file (cmd/nslab-capture); nslab opens
// the socket inside the node and hands it over.
const captureHelperName = "nslab-capture"

// captureOptions is nslab capture: an interface of a deployed lab (as
// in impairOptions), the pcap file to write (- for standard output), the
// frames to stop after (0: until Ctrl-C) and the bytes kept of each.
type captureOptions struct {
	Manager   *lab.Manager
	Lab       string
	Interface string
	File      string
	Count     int
	Snaplen   int
}

func captureCommand(run func(context.Context, *captureOptions) error) *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "name", Usage: "lab `NAME` (when several labs have the node)"},
		&cli.StringFlag{Name: "w", Usage: "pcap `FILE` to write, - for standard output"},
		&cli.IntFlag{Name: "c", Usage: "stop after `N` frames (default: until Ctrl-C)"},
		&cli.IntFlag{Name: "snaplen", Value: 262144, Usage: "bytes kept of each frame"},
	}
	cmd := command("capture", "write the frames a lab interface sends and receives as pcap, until Ctrl-C or -c N", "NODE:IF   (or LAB:NODE:IF)", flags, readCapture, run, runCaptureVerb)
	cmd.Description = "Examples: nslab capture ns2:veth1-peer -w r.pcap -c 100; nslab capture ns2:veth1-peer -w - | tcpdump -nr -;\n" +
		"nslab capture ns2:veth1-peer -w - | wireshark -k -i -. There is no filter expression: no well-kept pure-Go compiler\n" +
		"of the pcap filter language exists, so filter where you read (tcpdump -r FILE 'udp port 9')."
	return cmd
}

func readCapture(c *cli.Context) (*captureOptions, error) {
	if c.NArg() != 1 {
		return nil, cli.Exit("usage: nslab capture NODE:IF -w FILE|- [-c N] [--snaplen N]", 2)
	}
	out := c.String("w")
	if _, err := unix.IoctlGetTermios(int(os.Stdout.Fd()), unix.TCGETS); out == "" && err != nil { // not a terminal
		out = "-"
	}
	if out == "" {
		return nil, cli.Exit("nslab capture writes pcap: give -w FILE, or -w - and a reader (| tcpdump -nr -, | wireshark -k -i -)", 2)
	}
	if c.Int("snaplen") < 1 || c.Int("c") < 0 {
		return nil, cli.Exit("--snaplen is at least 1 and -c at least 0", 2)
	}
	return &captureOptions{Manager: manager(c), Lab: c.String("name"), Interface: c.Args().First(), File: out, Count: c.Int("c"), Snaplen: c.Int("snaplen")}, nil
}

// runCaptureVerb opens the packet socket in the node and hands it to the
// helper that writes the pcap.
func runCaptureVerb(ctx context.Context, o *captureOptions) error {
	helper, err := helperPath(captureHelperName)
	if err != nil {
		return err
	}
	if err := lab.CheckPrivileges(); err != nil {
		return err
	}
	sock, what, err := openCapture(o.Manager, o.Lab, o.Interface)
	if err != nil {
		return err
	}
	defer sock.Close()
	return runCapture(ctx, helper, sock, what, o)
}

// openCapture opens the packet socket on the interface arg names, inside
// its node.
func openCapture(m *lab.Manager, labName, arg string) (*os.File, string, error) {
	r, ep, err := openInterface(m, labName, arg)
	if err != nil {
		return nil, "", err
	}
	defer r.Close()
	if _, err := r.Link(ep); err != nil {
		return nil, "", err
	}
	sock, err := capture.Open(r.Node(ep.Node).NS, ep.Interface)
	return sock, ep.String(), err
}

// runCapture runs the helper on the socket until it stops (at -c N, or on
// Ctrl-C, which reaches it too; a SIGINT or SIGTERM to nslab alone is
// passed on).
func runCapture(ctx context.Context, helper string, sock *os.File, what string, o *captureOptions) error {
	cmd := exec.Command(helper, "-w", o.File, "-c", strconv.Itoa(o.Count), "-snaplen", strconv.Itoa(o.Snaplen), "-what", what)
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = os.Stdout, os.Stderr, []*os.File{sock}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", helper, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return helperExit(err)
	case <-ctx.Done():
		_ = cmd.Process.Signal(os.Interrupt) // it stops, writes its count and exits
		return helperExit(<-done)
	}
}

// helperExit turns the helper's exit into nslab's: its message is on
// stderr already.
func helperExit(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return cli.Exit("", ee.ExitCode())
	}
	return err
}
