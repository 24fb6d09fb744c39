package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nslab/nslab/pktgen/bench"
)

// plotHelperName is the program that draws plots (cmd/nslab-plot). It is
// a program of its own so that gonum/plot's start-up cost stays out of
// every nslab command.
const plotHelperName = "nslab-plot"

// plotHelper finds the plot helper for --plot FILE, before anything runs:
// next to this executable, else on PATH. "" when no plot is asked for.
func plotHelper(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	if ext := strings.ToLower(filepath.Ext(file)); ext != ".png" && ext != ".svg" {
		return "", fmt.Errorf("--plot %s: use a .png or .svg file name", file)
	}
	p, err := helperPath(plotHelperName)
	if err != nil {
		return "", fmt.Errorf("--plot: %w", err)
	}
	return p, nil
}

// helperPath finds one of nslab's helper programs: next to this
// executable, else on PATH.
func helperPath(name string) (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("this needs the %s helper next to nslab or on PATH (make build puts it in bin/): %w", name, err)
	}
	return p, nil
}

// runPlot hands the outcome to the helper as the JSON lines --out writes.
func runPlot(helper, file string, out *bench.Outcome) error {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, s := range out.Searches {
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	for _, r := range out.RFC2544 {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	for _, r := range out.Reports {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	cmd := exec.Command(helper, file)
	cmd.Stdin, cmd.Stdout = &in, os.Stderr
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("plot %s: %s", file, strings.TrimSpace(stderr.String()))
		}
		return fmt.Errorf("plot %s: %w", file, err)
	}
	return nil
}
