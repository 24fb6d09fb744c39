package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Start-up: how long a whole nslab process takes to say its version, next
// to a Go hello world built with the same toolchain on the same machine,
// to `ip -V`, and to the floor: a program that only links the three
// libraries nslab is built on (urfave/cli/v2, vishvananda/netlink,
// yaml.v3) and prints its version through urfave/cli. Every command is
// timed by hyperfine (-N, no shell), one after the other in one run.

const helloSrc = `package main

import "fmt"

func main() { fmt.Println("hello") }
`

const floorSrc = `package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
	"github.com/vishvananda/netlink"
	"gopkg.in/yaml.v3"
)

var _, _ = netlink.LinkByName, yaml.Unmarshal

func main() {
	if err := (&cli.App{Name: "floor", Version: "1"}).Run(os.Args); err != nil {
		fmt.Println(err)
	}
}
`

// startup is one command's start-up time.
type startup struct {
	name         string
	mean, stddev float64 // seconds
}

// measureStartup builds the hello world and the floor program in a
// temporary module (with this module's go.mod and go.sum, so the same
// library versions) and times them with nslab --version and ip -V.
func measureStartup(nslabBin string) ([]startup, error) {
	dir, err := os.MkdirTemp("", "nslab-startup-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: best effort
	hello, err := buildProgram(dir, "hello", helloSrc)
	if err != nil {
		return nil, err
	}
	floor, err := buildProgram(dir, "floor", floorSrc)
	if err != nil {
		return nil, err
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return nil, err
	}
	cmds := []string{hello, floor + " --version", nslabBin + " --version", ip + " -V"}
	out := filepath.Join(dir, "hyperfine.json")
	args := append([]string{"-N", "--warmup", "50", "--runs", "1000", "--export-json", out, "--style", "none"}, cmds...)
	if b, err := exec.Command("hyperfine", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("hyperfine: %w\n%s", err, b)
	}
	return readHyperfine(out, []string{"Go hello world", "floor (urfave/cli + netlink + yaml.v3)", "nslab --version", "ip -V"})
}

// buildProgram builds src as a program of its own module, with this
// module's requirements, statically as nslab is.
func buildProgram(dir, name, src string) (string, error) {
	mod := filepath.Join(dir, name)
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return "", err
	}
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		return "", err
	}
	gosum, err := os.ReadFile("go.sum")
	if err != nil {
		return "", err
	}
	files := map[string][]byte{
		"main.go": []byte(src),
		"go.mod":  []byte(strings.Replace(string(gomod), "module github.com/nslab/nslab", "module "+name, 1)),
		"go.sum":  gosum,
	}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(mod, f), b, 0o644); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(dir, name+".bin")
	cmd := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", bin, ".")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", name, err, b)
	}
	return bin, nil
}

func readHyperfine(path string, names []string) ([]startup, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Results []struct {
			Mean   float64 `json:"mean"`
			Stddev float64 `json:"stddev"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("hyperfine's results: %w", err)
	}
	if len(doc.Results) != len(names) {
		return nil, fmt.Errorf("hyperfine gave %d results for %d commands", len(doc.Results), len(names))
	}
	out := make([]startup, len(names))
	for i, r := range doc.Results {
		out[i] = startup{name: names[i], mean: r.Mean, stddev: r.Stddev}
	}
	return out, nil
}

// printStartup prints the start-up table, each against the hello world.
func printStartup(s []startup) {
	fmt.Printf("%-42s %10s %10s %10s\n", "start-up (hyperfine -N, 1000 runs)", "mean", "± σ", "x hello")
	for _, x := range s {
		fmt.Printf("%-42s %8.2fms %8.2fms %9.2fx\n", x.name, x.mean*1e3, x.stddev*1e3, x.mean/s[0].mean)
	}
}
