// Command nslab-tutorials regenerates the outputs in the tutorials
// (docs/tutorials/*.md) from today's code: every code block of a tutorial
// whose lines start with "$ " is a transcript, and each command's output
// is replaced by what running it prints now. A tutorial's commands run in
// order in one bash (as a reader types them, state carried from one
// block to the next), from the repository's root with bin/ first on PATH.
//
//	nslab-tutorials docs/tutorials/tour.md docs/tutorials/nat-router.md
//	nslab-tutorials -transcript walk.txt docs/tutorials/laptop-lab.md
//
// A block preceded by the line <!-- nslab-tutorials: vm --> is one this
// machine cannot run (its kernel lacks netem): with -transcript its
// outputs come from a transcript of the same commands, as
// examples/laptop-lab.sh prints it in the VM (make walkthrough), and
// without it the block is left as it is. make tutorials does both.
package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	transcript := flag.String("transcript", "", "take the outputs from this transcript (\"$ CMD\" lines, each followed by its output) instead of running the commands")
	only := flag.String("only", "", "regenerate only the commands matching this regular expression (the others keep their outputs and are not run): a doc whose other runs take long, such as docs/benchmarking.md's make targets, after a change to one verb's output")
	checkOnly := flag.Bool("check", false, "change nothing: run the commands and fail when a doc's output (figures masked) or a figure its prose quotes is not what today's code prints")
	flag.Parse()
	if flag.NArg() == 0 {
		fail(fmt.Errorf("usage: nslab-tutorials [-check] [-transcript FILE] TUTORIAL.md [TUTORIAL.md]"))
	}
	if *checkOnly {
		drifted := 0
		for _, path := range flag.Args() {
			found, err := checkDoc(path)
			if err != nil {
				fail(fmt.Errorf("%s: %w", path, err))
			}
			for _, f := range found {
				fmt.Printf("%s: %s\n", path, f)
			}
			drifted += len(found)
		}
		if drifted > 0 {
			fail(fmt.Errorf("%d place(s) drifted from today's code: run make tutorials (or make benchdocs), and say in prose only what the block shows", drifted))
		}
		return
	}
	onlyRE, err := regexp.Compile(*only)
	if err != nil {
		fail(fmt.Errorf("-only: %w", err))
	}
	for _, path := range flag.Args() {
		if err := regen(path, *transcript, onlyRE); err != nil {
			fail(fmt.Errorf("%s: %w", path, err))
		}
		fmt.Printf("nslab-tutorials: %s regenerated\n", path)
	}
}

// vmMark marks the next code block as one for the VM's transcript.
const vmMark = "<!-- nslab-tutorials: vm -->"

// regen rewrites the transcript blocks of one tutorial: those this
// machine runs whose command matches only, and with a transcript the
// VM's.
func regen(path, transcript string, only *regexp.Regexp) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(string(data), "\n")
	here, vm := commands(lines)
	if len(here)+len(vm) == 0 {
		return fmt.Errorf("no transcript blocks (lines starting with $ inside ``` blocks)")
	}
	here = slices.DeleteFunc(here, func(c int) bool { return !only.MatchString(lines[c]) })
	outs, err := run(lines, here)
	if err != nil {
		return err
	}
	cmds := here
	if transcript != "" {
		vmOuts, err := fromTranscript(transcript, lines, vm)
		if err != nil {
			return err
		}
		cmds, outs = merge(here, outs, vm, vmOuts)
		if err := attachments(transcript, filepath.Dir(path)); err != nil {
			return err
		}
	}
	return os.WriteFile(path, []byte(rewrite(lines, cmds, outs)), 0o644)
}

// checkDoc runs a doc's commands (those this machine runs) and returns
// where it drifted: outputs that differ, figures masked, and figures its
// prose quotes that its blocks do not show.
func checkDoc(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	found := proseFigures(lines)
	here, _ := commands(lines)
	dir, err := scratch()
	if err != nil {
		return nil, err
	}
	outs, err := runIn(dir, lines, here)
	if rmErr := os.RemoveAll(dir); err == nil && rmErr != nil {
		err = fmt.Errorf("remove the scratch copy: %w", rmErr)
	}
	if err != nil {
		return nil, err
	}
	for _, d := range compare(lines, here, outs) {
		found = append(found, d.String())
	}
	return found, nil
}

// vmMarked says whether the marks right above the fence at line i hold
// vmMark.
func vmMarked(lines []string, i int) bool {
	for i--; i >= 0 && strings.HasPrefix(lines[i], "<!-- nslab-tutorials: "); i-- {
		if strings.TrimSpace(lines[i]) == vmMark {
			return true
		}
	}
	return false
}

// commands are the line numbers of the "$ " lines inside code blocks:
// those of blocks this machine runs, and those of blocks marked vmMark.
func commands(lines []string) (here, vm []int) {
	in, marked := false, false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			in = !in
			marked = in && vmMarked(lines, i)
			continue
		}
		if in && strings.HasPrefix(l, "$ ") {
			if marked {
				vm = append(vm, i)
			} else {
				here = append(here, i)
			}
		}
	}
	return here, vm
}

// merge puts two sets of commands and their outputs in file order.
func merge(a []int, ao map[int]string, b []int, bo map[int]string) ([]int, map[int]string) {
	type c struct {
		line int
		out  string
	}
	var all []c
	for k, l := range a {
		all = append(all, c{l, ao[k]})
	}
	for k, l := range b {
		all = append(all, c{l, bo[k]})
	}
	slices.SortFunc(all, func(x, y c) int { return x.line - y.line })
	lines, outs := make([]int, len(all)), map[int]string{}
	for k, x := range all {
		lines[k], outs[k] = x.line, x.out
	}
	return lines, outs
}

// end is the line after command k's output: the next command, or the
// block's closing fence.
func end(lines []string, cmds []int, k int) int {
	for i := cmds[k] + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "$ ") || strings.HasPrefix(lines[i], "```") {
			return i
		}
	}
	return len(lines)
}

// scratch is a copy of the repository's tracked files in a new temporary
// directory, with its bin/ the repository's: a check runs the docs'
// commands there, so those that write files (a plot, an imported lab)
// change nothing in the repository.
func scratch() (string, error) {
	root, err := os.Getwd()
	if err != nil {
		return "", err
	}
	files, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		return "", fmt.Errorf("git ls-files (run from the repository's root): %w", err)
	}
	dir, err := os.MkdirTemp("", "nslab-docs-check-")
	if err != nil {
		return "", err
	}
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		if err = copyFile(filepath.Join(root, f), filepath.Join(dir, f)); err != nil {
			break
		}
	}
	if err == nil {
		err = os.Symlink(filepath.Join(root, "bin"), filepath.Join(dir, "bin"))
	}
	if err != nil {
		return "", errors.Join(err, os.RemoveAll(dir))
	}
	return dir, nil
}

// copyFile copies one file, its mode kept, making its directory.
func copyFile(from, to string) error {
	fi, err := os.Lstat(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		return os.Symlink(target, to)
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, fi.Mode().Perm())
}

// run runs the commands in one bash in the repository's root and returns
// each one's output.
func run(lines []string, cmds []int) (map[int]string, error) {
	return runIn("", lines, cmds)
}

// runIn is run in dir ("": the current directory). What the commands
// write under /tmp (a doc's scratch file, a state directory) and was not
// there before is removed after them.
func runIn(dir string, lines []string, cmds []int) (outs map[int]string, err error) {
	if len(cmds) == 0 {
		return map[int]string{}, nil
	}
	made := newTmpPaths(lines, cmds)
	defer func() {
		if rmErr := removeAll(made); err == nil && rmErr != nil {
			err = fmt.Errorf("remove what the commands wrote in /tmp: %w", rmErr)
		}
	}()
	var script strings.Builder
	script.WriteString("export PATH=\"$PWD/bin:$PATH\"\nexec 2>&1\n")
	for k, c := range cmds {
		// Each marker on a line of its own, after a newline: a command's
		// output that does not end with one (kubectl's jsonpath) would
		// otherwise hide the next marker (the newline is trimmed).
		fmt.Fprintf(&script, "printf '\\n@@nslab-tutorials %d\\n'\n%s\n", k, strings.TrimPrefix(lines[c], "$ "))
	}
	script.WriteString("printf '\\n@@nslab-tutorials end\\n'\n")
	cmd := exec.Command("bash", "--norc", "--noprofile")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(script.String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("bash: %w\n%s", err, out.String())
	}
	return split(out.String())
}

// tmpPath is a path under /tmp a command names; its first group is the
// entry of /tmp itself.
var tmpPath = regexp.MustCompile(`(/tmp/[^/\s'"|;&)<>]+)`)

// newTmpPaths is the entries of /tmp the commands name that do not exist
// yet.
func newTmpPaths(lines []string, cmds []int) []string {
	var paths []string
	for _, c := range cmds {
		for _, m := range tmpPath.FindAllStringSubmatch(lines[c], -1) {
			if _, err := os.Lstat(m[1]); errors.Is(err, fs.ErrNotExist) && !slices.Contains(paths, m[1]) {
				paths = append(paths, m[1])
			}
		}
	}
	return paths
}

// removeAll removes each path and everything in it.
func removeAll(paths []string) error {
	var errs []error
	for _, p := range paths {
		errs = append(errs, os.RemoveAll(p))
	}
	return errors.Join(errs...)
}

var marker = regexp.MustCompile(`(?m)^@@nslab-tutorials (\d+|end)$`)

// split cuts bash's output at the markers.
func split(s string) (map[int]string, error) {
	outs := map[int]string{}
	locs := marker.FindAllStringSubmatchIndex(s, -1)
	for i, m := range locs {
		if s[m[2]:m[3]] == "end" {
			break
		}
		k, err := strconv.Atoi(s[m[2]:m[3]])
		if err != nil {
			return nil, err
		}
		next := len(s)
		if i+1 < len(locs) {
			next = locs[i+1][0]
		}
		outs[k] = strings.TrimSuffix(strings.TrimPrefix(s[m[1]:next], "\n"), "\n")
	}
	return outs, nil
}

// fromTranscript finds each command's output in a transcript of "$ CMD"
// lines: the lines after the same command, up to the next "$ " line.
func fromTranscript(path string, lines []string, cmds []int) (map[int]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tl := strings.Split(strings.ReplaceAll(string(data), "\r", ""), "\n")
	outs := map[int]string{}
	from := 0
	for k, c := range cmds {
		found := false
		for i := from; i < len(tl); i++ {
			if tl[i] != lines[c] {
				continue
			}
			j := i + 1
			for j < len(tl) && !strings.HasPrefix(tl[j], "$ ") && !strings.HasPrefix(tl[j], "vmtest: ") && !strings.HasPrefix(tl[j], fileMark) {
				j++ // up to the next command, the VM harness's own lines or a file
			}
			outs[k] = strings.Join(tl[i+1:j], "\n") + "\n"
			from, found = j, true
			break
		}
		if !found {
			return nil, fmt.Errorf("the transcript has no %q after the commands before it", lines[c])
		}
	}
	return outs, nil
}

// fileMark starts a transcript's line naming a file the VM made (a plot):
// the next line is its content in base64.
const fileMark = "@@file "

// attachments writes the files a transcript carries into dir, each under
// its own name (a bare name: nothing outside dir).
func attachments(transcript, dir string) error {
	data, err := os.ReadFile(transcript)
	if err != nil {
		return err
	}
	tl := strings.Split(strings.ReplaceAll(string(data), "\r", ""), "\n")
	for i, l := range tl {
		name, ok := strings.CutPrefix(l, fileMark)
		if !ok {
			continue
		}
		if name != filepath.Base(name) || name == "." || i+1 >= len(tl) {
			return fmt.Errorf("transcript %s: %q is not a file name with its content after it", transcript, l)
		}
		content, err := base64.StdEncoding.DecodeString(strings.TrimSpace(tl[i+1]))
		if err != nil {
			return fmt.Errorf("transcript %s: file %s: %w", transcript, name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			return err
		}
		fmt.Printf("nslab-tutorials: %s from the transcript\n", filepath.Join(dir, name))
	}
	return nil
}

// rewrite puts each command's new output after it.
func rewrite(lines []string, cmds []int, outs map[int]string) string {
	var b strings.Builder
	at := 0
	for k, c := range cmds {
		b.WriteString(strings.Join(lines[at:c+1], "\n") + "\n")
		out := strings.TrimRight(outs[k], "\n")
		if out != "" {
			b.WriteString(out + "\n")
		}
		at = end(lines, cmds, k)
	}
	b.WriteString(strings.Join(lines[at:], "\n"))
	return b.String()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "nslab-tutorials:", err)
	os.Exit(1)
}
