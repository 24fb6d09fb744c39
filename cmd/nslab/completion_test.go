package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bashComplete runs bash's completion of nslab for words (the last one
// being completed), with the script nslab completion bash printed (in
// file completion) and c's nslab first on PATH, and returns the
// candidates.
func bashComplete(t *testing.T, c *runner, dir, completion string, words ...string) []string {
	t.Helper()
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + w + "'"
	}
	script := fmt.Sprintf("source %s\nCOMP_WORDS=(nslab %s)\nCOMP_CWORD=%d\n_nslab\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n",
		completion, strings.Join(quoted, " "), len(words))
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(c.bin)+":"+os.Getenv("PATH"), "NSLAB_RUN_MAIN=1")
	if c.stateDir != "" {
		cmd.Env = append(cmd.Env, "NSLAB_STATE_DIR="+c.stateDir)
	}
	cmd.Env = append(cmd.Env, c.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash completion of %q: %v\n%s", words, err, out)
	}
	return strings.Fields(string(out))
}

// TestBashCompletion: bash completes verbs, options, the words an option
// takes, the file's traffic runs, and the nodes and NODE:IF of a deployed
// lab; with nothing to offer it completes file names.
func TestBashCompletion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	c := asCompletingNslab(t)
	file, name := labFile(t, "client-router-server.yaml")
	dir := filepath.Dir(file)
	cases := []struct {
		words []string
		want  []string
	}{
		{[]string{"de"}, []string{"deploy", "destroy"}},
		{[]string{"bench", "--pla"}, []string{"--placement"}},
		{[]string{"bench", "--placement", ""}, []string{"on", "auto", "off"}},
		{[]string{"bench", "-t", file, "--traffic", ""}, []string{"forward", "sweep"}},
		{[]string{"generate", "c"}, []string{"chain", "clos"}},
		{[]string{"top", "--sort", ""}, []string{"node", "rx", "tx", "drops"}},
		{[]string{"validate", filepath.Base(file)[:3]}, []string{filepath.Base(file)}},
	}
	if labtestRoot() {
		if code, _, errs := c.run("deploy", file); code != 0 {
			t.Fatalf("deploy: %s", errs)
		}
		t.Cleanup(func() { c.run("destroy", "--name", name) })
		cases = append(cases,
			struct {
				words []string
				want  []string
			}{[]string{"link", "down", "ns2:"}, []string{"ns2:veth1-peer", "ns2:veth2"}},
			struct {
				words []string
				want  []string
			}{[]string{"exec", "ns"}, []string{"ns1", "ns2", "ns3"}},
			struct {
				words []string
				want  []string
			}{[]string{"destroy", "--name", ""}, []string{name}},
			struct {
				words []string
				want  []string
			}{[]string{"web", ""}, []string{name}},
		)
	}
	code, script, errs := c.run("completion", "bash")
	completion := filepath.Join(t.TempDir(), "nslab.bash")
	if code != 0 || os.WriteFile(completion, []byte(script), 0o644) != nil {
		t.Fatalf("nslab completion bash: exit %d, %s", code, errs)
	}
	// Each case starts bash and nslab (slow under the race detector): they
	// run side by side.
	// A lab name completes to every lab this machine has, this test's and
	// any another process deployed meanwhile (the premise "no other lab"
	// is not the test's to hold): each name offered must be one of the
	// labs inspect lists before or after, and this test's among them.
	labsHere := func() []string {
		_, out, _ := c.run("inspect", "--format", "json")
		var list []struct {
			Lab string `json:"lab"`
		}
		_ = json.Unmarshal([]byte(out), &list)
		var names []string
		for _, l := range list {
			names = append(names, l.Lab)
		}
		return names
	}
	before := labsHere()
	t.Run("cases", func(t *testing.T) {
		for _, k := range cases {
			t.Run(strings.Join(k.words, " "), func(t *testing.T) {
				t.Parallel()
				got := bashComplete(t, c, dir, completion, k.words...)
				slices.Sort(got)
				want := slices.Clone(k.want)
				slices.Sort(want)
				if slices.Equal(want, []string{name}) && slices.Contains(got, name) {
					known := append(before, labsHere()...)
					if slices.ContainsFunc(got, func(g string) bool { return !slices.Contains(known, g) }) {
						t.Errorf("nslab %s<TAB>: %q, want this machine's labs %q", strings.Join(k.words, " "), got, known)
					}
					return
				}
				if !slices.Equal(got, want) {
					t.Errorf("nslab %s<TAB>: %q, want %q", strings.Join(k.words, " "), got, want)
				}
			})
		}
	})
}

// asCompletingNslab is a runner whose nslab is a program called nslab on
// PATH (the completion scripts call it by name).
func asCompletingNslab(t *testing.T) *runner {
	c := newCLI(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "nslab")
	if err := os.Symlink(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	c.bin = bin
	return c
}

// TestCompletionScriptsParse: the zsh and fish scripts are valid for
// their shells where the shells are installed (bash's runs above).
func TestCompletionScriptsParse(t *testing.T) {
	for sh, check := range map[string][]string{"bash": {"bash", "-n"}, "zsh": {"zsh", "-n"}, "fish": {"fish", "--no-execute"}} {
		if _, err := exec.LookPath(check[0]); err != nil {
			t.Logf("%s is not installed: its script is not parsed", sh)
			continue
		}
		f := filepath.Join(t.TempDir(), "nslab."+sh)
		if err := os.WriteFile(f, []byte(completionScripts[sh]), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(check[0], append(check[1:], f)...).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", sh, err, out)
		}
	}
}

func labtestRoot() bool { return os.Geteuid() == 0 }
