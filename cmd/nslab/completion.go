package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/nslab/nslab/pktgen/watch"

	"github.com/nslab/nslab/topology/generate"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// Shell completion: nslab completion SHELL prints a script that asks the
// hidden nslab __complete WORDS... for the candidates of the last word.
// The candidates come from the command definitions (verbs, flags, the
// words a flag takes) and from the machine and the file: deployed labs,
// their nodes and NODE:IF, the file's traffic runs and groups. No
// candidate means "complete a file name", which each script falls back to.

// completionOptions is nslab completion: the shell to write a script for.
type completionOptions struct {
	Shell string
	Out   io.Writer
}

func completionCommand(run func(context.Context, *completionOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "It completes verbs and options, deployed labs (--name), nodes and NODE:IF of deployed labs, and the\n" +
			"traffic runs and groups of the file given (--traffic).\n\nExamples:\n" +
			"  source <(nslab completion bash)          # in ~/.bashrc\n" +
			"  nslab completion zsh > \"${fpath[1]}/_nslab\"\n" +
			"  nslab completion fish > ~/.config/fish/completions/nslab.fish",
		Action: action(func(c *cli.Context) (*completionOptions, error) {
			if c.NArg() != 1 || completionScripts[c.Args().First()] == "" {
				return nil, cli.Exit("usage: nslab completion bash|zsh|fish", 2)
			}
			return &completionOptions{Shell: c.Args().First(), Out: c.App.Writer}, nil
		}, or(run, runCompletion)),
	}
}

func runCompletion(_ context.Context, o *completionOptions) error {
	_, err := io.WriteString(o.Out, completionScripts[o.Shell])
	return err
}

var completionScripts = map[string]string{
	"bash": `# nslab completion for bash: source <(nslab completion bash)
_nslab() {
	local cur words cword
	if declare -F _get_comp_words_by_ref >/dev/null; then
		_get_comp_words_by_ref -n : cur words cword   # NODE:IF is one word
	else
		cur=${COMP_WORDS[COMP_CWORD]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
	fi
	local IFS=$'\n'
	COMPREPLY=($(nslab __complete "${words[@]:1:cword}" 2>/dev/null))
	if [ ${#COMPREPLY[@]} -eq 0 ]; then
		COMPREPLY=($(compgen -f -- "$cur"))
	elif declare -F __ltrim_colon_completions >/dev/null; then
		__ltrim_colon_completions "$cur"
	fi
}
complete -o filenames -F _nslab nslab
`,
	"zsh": `#compdef nslab
# nslab completion for zsh: nslab completion zsh > "${fpath[1]}/_nslab"
_nslab() {
	local -a cands
	cands=("${(@f)$(nslab __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	if (( ${#cands} )) && [[ -n ${cands[1]} ]]; then
		compadd -- "${cands[@]}"
	else
		_files
	fi
}
compdef _nslab nslab
`,
	"fish": `# nslab completion for fish: nslab completion fish > ~/.config/fish/completions/nslab.fish
function __nslab_complete
	set -l tokens (commandline -opc) (commandline -ct)
	nslab __complete $tokens[2..-1] 2>/dev/null
end
complete -c nslab -a '(__nslab_complete)'
`,
}

// completeOptions is the hidden nslab __complete: the words after nslab,
// the last one the word being completed.
type completeOptions struct {
	App     *cli.App
	Manager *lab.Manager
	Words   []string
	Out     io.Writer
}

func completeCommand(run func(context.Context, *completeOptions) error) *cli.Command {
	return &cli.Command{
		Name:            "__complete",
		Hidden:          true,
		SkipFlagParsing: true,
		Action: action(func(c *cli.Context) (*completeOptions, error) {
			return &completeOptions{App: c.App, Manager: manager(c), Words: c.Args().Slice(), Out: c.App.Writer}, nil
		}, or(run, runComplete)),
	}
}

func runComplete(_ context.Context, o *completeOptions) error {
	if len(o.Words) == 0 {
		o.Words = []string{""}
	}
	cur, before := o.Words[len(o.Words)-1], o.Words[:len(o.Words)-1]
	for _, c := range candidates(o, before, cur) {
		if strings.HasPrefix(c, cur) {
			fmt.Fprintln(o.Out, c)
		}
	}
	return nil
}

// candidates are the words that may come after before (prefix filtering
// is the caller's).
func candidates(o *completeOptions, before []string, cur string) []string {
	verb, args := findVerb(o.App, before)
	if verb == nil {
		if strings.HasPrefix(cur, "-") {
			return flagNames(o.App.VisibleFlags())
		}
		return verbNames(o.App)
	}
	if len(args) > 0 {
		if f := flagOf(verb, args[len(args)-1]); f != nil && takesValue(f) {
			return flagValues(o, verb, f, args)
		}
	}
	if strings.HasPrefix(cur, "-") {
		return flagNames(verb.VisibleFlags())
	}
	return operands(o, verb, positional(verb, args))
}

// findVerb is the verb among words and the words after it.
func findVerb(app *cli.App, words []string) (*cli.Command, []string) {
	for i, w := range words {
		if strings.HasPrefix(w, "-") {
			continue
		}
		if c := app.Command(w); c != nil && !c.Hidden {
			return c, words[i+1:]
		}
		return nil, nil
	}
	return nil, nil
}

func verbNames(app *cli.App) []string {
	var out []string
	for _, c := range visible(app) {
		out = append(out, c.Name)
	}
	return out
}

func flagNames(flags []cli.Flag) []string {
	var out []string
	for _, f := range flags {
		for _, n := range f.Names() {
			if len(n) > 1 {
				out = append(out, "--"+n)
			}
		}
	}
	return out
}

// flagOf is the flag word names (--name, -t), or nil.
func flagOf(verb *cli.Command, word string) cli.Flag {
	if !strings.HasPrefix(word, "-") || strings.Contains(word, "=") {
		return nil
	}
	name := strings.TrimLeft(word, "-")
	for _, f := range verb.Flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	_, isBool := f.(*cli.BoolFlag)
	return !isBool
}

// positional is args without the flags and their values.
func positional(verb *cli.Command, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if f := flagOf(verb, args[i]); f != nil {
			if takesValue(f) {
				i++
			}
			continue
		}
		if args[i] != "--" {
			out = append(out, args[i])
		}
	}
	return out
}

// flagValues are the words flag f of verb takes; nil: a file name.
func flagValues(o *completeOptions, verb *cli.Command, f cli.Flag, args []string) []string {
	switch f.Names()[0] {
	case "name":
		return deployedLabs(o.Manager)
	case "traffic":
		return trafficNames(verb, args)
	case "engine":
		return spec.Engines
	case "placement":
		return []string{"on", "auto", "off"}
	case "format":
		return map[string][]string{"bench": {"table", "json", "csv", "markdown"}, "compare": {"table", "json", "csv", "markdown"},
			"graph": {"text", "dot", "mermaid"}, "check": {"matrix", "list", "json"}, "export": {"containerlab"}, "top": {"table", "json"}}[verb.Name]
	case "sort":
		return watch.SortKeys
	case "measure":
		return interfacesOfDeployed(o.Manager)
	}
	return nil
}

// operands are what the next positional word of verb may be, after pos.
func operands(o *completeOptions, verb *cli.Command, pos []string) []string {
	switch verb.Name {
	case "exec":
		if len(pos) == 0 {
			return nodesOfDeployed(o.Manager)
		}
	case "impair", "capture":
		if len(pos) == 0 {
			return interfacesOfDeployed(o.Manager)
		}
	case "node":
		switch len(pos) {
		case 0:
			return []string{"stop", "start"}
		case 1:
			return nodesOfDeployed(o.Manager)
		}
	case "link":
		switch len(pos) {
		case 0:
			return []string{"down", "up"}
		case 1:
			return interfacesOfDeployed(o.Manager)
		}
	case "generate":
		if len(pos) == 0 {
			return generate.Kinds
		}
	case "completion":
		return []string{"bash", "fish", "zsh"}
	case "top", "web":
		if len(pos) == 0 {
			return deployedLabs(o.Manager)
		}
	case "metrics":
		return deployedLabs(o.Manager)
	}
	return nil
}

// deployedLabs are the names of the labs with state on this machine.
func deployedLabs(m *lab.Manager) []string {
	labs, err := m.Store().List()
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range labs {
		out = append(out, l.Lab)
	}
	return out
}

// deployedSpecs are the deployed labs as their state records them.
func deployedSpecs(m *lab.Manager) []*spec.Lab {
	var out []*spec.Lab
	for _, name := range deployedLabs(m) {
		st, err := m.Recorded(name)
		if err != nil {
			continue
		}
		if l, err := st.Spec(); err == nil {
			out = append(out, l)
		}
	}
	return out
}

func nodesOfDeployed(m *lab.Manager) []string {
	var out []string
	for _, l := range deployedSpecs(m) {
		for _, n := range l.Nodes {
			out = append(out, n.Name)
		}
	}
	return out
}

func interfacesOfDeployed(m *lab.Manager) []string {
	var out []string
	for _, l := range deployedSpecs(m) {
		for _, n := range l.Nodes {
			for _, i := range n.Interfaces {
				if i.Kind != spec.KindLoopback {
					out = append(out, n.Name+":"+i.Name)
				}
			}
		}
	}
	return out
}

// trafficNames are the traffic runs and groups of the file the words
// name (-t FILE, or the first operand).
func trafficNames(verb *cli.Command, args []string) []string {
	file := ""
	for i, a := range args {
		if (a == "-t" || a == "--topo") && i+1 < len(args) {
			file = args[i+1]
		}
	}
	if pos := positional(verb, args); file == "" && len(pos) > 0 {
		file = pos[0]
	}
	l, err := spec.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range l.Traffic {
		out = append(out, t.Name)
		if t.Group != "" && !slices.Contains(out, t.Group) {
			out = append(out, t.Group)
		}
	}
	return out
}
