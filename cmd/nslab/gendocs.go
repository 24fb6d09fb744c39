package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// gendocsOptions is the hidden nslab gendocs: where to write the man pages
// (nslab.1, nslab-VERB.1, nslab-lab.5) and the command pages
// (docs/commands/VERB.md), from the CLI's own definitions.
type gendocsOptions struct {
	App      *cli.App
	Man, Doc string // directories; "": not written
	Date     string
}

func gendocsCommand(run func(context.Context, *gendocsOptions) error) *cli.Command {
	return &cli.Command{
		Name:   "gendocs",
		Usage:  "write the man pages and docs/commands from the command definitions (make docs)",
		Hidden: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "man", Usage: "`DIR` for the man pages"},
			&cli.StringFlag{Name: "markdown", Usage: "`DIR` for the command pages"},
		},
		Action: action(func(c *cli.Context) (*gendocsOptions, error) {
			return &gendocsOptions{App: c.App, Man: c.String("man"), Doc: c.String("markdown"), Date: time.Now().Format("2006-01-02")}, nil
		}, or(run, runGendocs)),
	}
}

func runGendocs(_ context.Context, o *gendocsOptions) error {
	pages := map[string]string{}
	if o.Man != "" {
		pages[filepath.Join(o.Man, "nslab.1")] = manMain(o.App, o.Date)
		pages[filepath.Join(o.Man, "nslab-lab.5")] = manLab(o.Date)
		for _, c := range visible(o.App) {
			pages[filepath.Join(o.Man, "nslab-"+c.Name+".1")] = manVerb(c, o.Date)
		}
	}
	if o.Doc != "" {
		for _, c := range visible(o.App) {
			pages[filepath.Join(o.Doc, c.Name+".md")] = markdownVerb(c)
		}
		index := filepath.Clean(o.Doc) + ".md" // docs/commands.md beside docs/commands/
		if text, err := os.ReadFile(index); err == nil {
			list, err := withVerbList(string(text), o.App, filepath.Base(filepath.Clean(o.Doc)))
			if err != nil {
				return fmt.Errorf("%s: %w", index, err)
			}
			pages[index] = list
		}
	}
	for path, text := range pages {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// visible is the app's verbs but the hidden ones and help.
func visible(app *cli.App) []*cli.Command {
	var out []*cli.Command
	for _, c := range app.Commands {
		if !c.Hidden && c.Name != "help" {
			out = append(out, c)
		}
	}
	return out
}

// roff escapes text for a man page: backslashes, and a line that would
// start with a control character.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

func manHeader(name string, section int, date string) string {
	return fmt.Sprintf(".TH %s %d %s \"nslab %s\" \"nslab manual\"\n", strings.ToUpper(name), section, date, version)
}

func manMain(app *cli.App, date string) string {
	var b strings.Builder
	b.WriteString(manHeader("nslab", 1, date))
	fmt.Fprintf(&b, ".SH NAME\nnslab \\- %s\n", roff(app.Usage))
	b.WriteString(".SH SYNOPSIS\n.B nslab\n[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR]\n")
	b.WriteString(".SH DESCRIPTION\nnslab builds a network lab of namespaces on one Linux host from a YAML file, and measures packet forwarding in it.\n")
	b.WriteString(".SH COMMANDS\n")
	for _, c := range visible(app) {
		fmt.Fprintf(&b, ".TP\n.BR nslab\\-%s (1)\n%s\n", roff(c.Name), roff(c.Usage))
	}
	b.WriteString(".SH GLOBAL OPTIONS\n")
	writeManFlags(&b, app.VisibleFlags())
	b.WriteString(".SH FILES\n.TP\n.I /run/nslab\nlab state files and service logs\n.TP\n.I /run/netns\nthe named network namespaces\n")
	b.WriteString(".SH SEE ALSO\n.BR nslab\\-lab (5),\n.BR ip (8),\n.BR ip\\-netns (8)\n")
	return b.String()
}

func manVerb(c *cli.Command, date string) string {
	var b strings.Builder
	b.WriteString(manHeader("nslab-"+c.Name, 1, date))
	fmt.Fprintf(&b, ".SH NAME\nnslab\\-%s \\- %s\n", roff(c.Name), roff(c.Usage))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B nslab %s\n[\\fIOPTIONS\\fR] %s\n", roff(c.Name), roff(c.ArgsUsage))
	desc, examples, _ := strings.Cut(c.Description, "\nExamples:\n")
	if strings.TrimSpace(desc) != "" {
		fmt.Fprintf(&b, ".SH DESCRIPTION\n%s\n", roff(strings.TrimSpace(desc)))
	}
	if flags := c.VisibleFlags(); len(flags) > 0 {
		b.WriteString(".SH OPTIONS\n")
		writeManFlags(&b, flags)
	}
	if strings.TrimSpace(examples) != "" {
		b.WriteString(".SH EXAMPLES\n")
		for i, e := range strings.Split(strings.TrimSpace(examples), "\n") {
			if i > 0 {
				b.WriteString(".PP\n")
			}
			fmt.Fprintf(&b, ".nf\n%s\n.fi\n", roff(strings.TrimSpace(e)))
		}
	}
	b.WriteString(".SH SEE ALSO\n.BR nslab (1),\n.BR nslab\\-lab (5)\n")
	return b.String()
}

func writeManFlags(b *strings.Builder, flags []cli.Flag) {
	for _, f := range flags {
		forms, usage := flagDoc(f, true)
		for i, form := range forms {
			forms[i] = `\fB` + roff(form) + `\fR`
		}
		fmt.Fprintf(b, ".TP\n%s\n%s\n", strings.Join(forms, ", "), roff(usage))
	}
}

// flagDoc is a flag's spellings (-c, --name) and its usage with its
// default: the library's default text (quoted, false for booleans) when
// defaultText, as the man pages give it, else the value of a flag that
// takes one, as the command pages do.
func flagDoc(f cli.Flag, defaultText bool) (forms []string, usage string) {
	for _, n := range f.Names() {
		if len(n) == 1 {
			forms = append(forms, "-"+n)
		} else {
			forms = append(forms, "--"+n)
		}
	}
	d, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return forms, ""
	}
	usage = strings.ReplaceAll(d.GetUsage(), "`", "")
	switch {
	case defaultText && d.GetDefaultText() != "":
		usage += " (default " + d.GetDefaultText() + ")"
	case d.TakesValue() && d.GetValue() != "":
		usage += " (default " + d.GetValue() + ")"
	}
	return forms, usage
}

func manLab(date string) string {
	var b strings.Builder
	b.WriteString(manHeader("nslab-lab", 5, date))
	b.WriteString(".SH NAME\nnslab\\-lab \\- the nslab lab file\n")
	b.WriteString(".SH DESCRIPTION\nA lab file is YAML. Its mappings and their keys follow, as \\fBnslab validate\\fR reads them; \\fBnslab schema\\fR prints the same as a JSON Schema. Units are the same everywhere: percentages 0.5%, bit rates 10Mbit (never bps), packet rates 200kpps, durations 20ms.\n")
	for _, m := range spec.KeyDocs() {
		fmt.Fprintf(&b, ".SS %s (%s)\n", roff(m.Title), roff(m.Name))
		if len(m.Required) > 0 {
			fmt.Fprintf(&b, "Required: %s.\n", roff(strings.Join(m.Required, ", ")))
		}
		for _, k := range m.Keys {
			fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roff(k[0]), roff(k[1]))
		}
	}
	b.WriteString(".SH EXAMPLES\nSee the examples directory of the source, each a lab of its own.\n")
	b.WriteString(".SH SEE ALSO\n.BR nslab (1),\n.BR nslab\\-validate (1),\n.BR nslab\\-schema (1)\n")
	return b.String()
}

func markdownVerb(c *cli.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# nslab %s\n\n<!-- Written by `make docs` from the command's definition (cmd/nslab); do not edit. -->\n\n%s\n\n", c.Name, c.Usage)
	fmt.Fprintf(&b, "```\nnslab %s [OPTIONS] %s\n```\n\n", c.Name, c.ArgsUsage)
	desc, examples, _ := strings.Cut(c.Description, "\nExamples:\n")
	if strings.TrimSpace(desc) != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(desc))
	}
	if flags := c.VisibleFlags(); len(flags) > 0 {
		b.WriteString("## Options\n\n| option | what it does |\n|---|---|\n")
		for _, f := range flags {
			forms, usage := flagDoc(f, false)
			fmt.Fprintf(&b, "| `%s` | %s |\n", strings.Join(forms, "`, `"), strings.ReplaceAll(usage, "|", "\\|"))
		}
		b.WriteString("\n")
	}
	if strings.TrimSpace(examples) != "" {
		b.WriteString("## Examples\n\n```\n")
		for _, e := range strings.Split(strings.TrimSpace(examples), "\n") {
			b.WriteString(strings.TrimSpace(e) + "\n")
		}
		b.WriteString("```\n")
	}
	return b.String()
}

// Markers of the list of verbs in docs/commands.md, which gendocs writes
// from the verbs themselves: the list cannot miss one.
const (
	verbListBegin = "<!-- the verbs: written by make docs from their definitions -->"
	verbListEnd   = "<!-- end of the verbs -->"
)

// withVerbList is text with the lines between the list markers replaced
// by one line per verb of app: its page under dir and its usage.
func withVerbList(text string, app *cli.App, dir string) (string, error) {
	begin, end := strings.Index(text, verbListBegin), strings.Index(text, verbListEnd)
	if begin < 0 || end < begin {
		return "", fmt.Errorf("no %q ... %q block for the list of verbs", verbListBegin, verbListEnd)
	}
	var b strings.Builder
	b.WriteString(verbListBegin + "\n")
	for _, c := range visible(app) {
		fmt.Fprintf(&b, "- [nslab %s](%s/%s.md): %s\n", c.Name, dir, c.Name, c.Usage)
	}
	return text[:begin] + b.String() + text[end:], nil
}
