package main

import (
	"context"
	"io"

	"github.com/nslab/nslab/topology/spec"
	"github.com/urfave/cli/v2"
)

// schemaOptions is nslab schema: where to write the lab file's JSON Schema.
type schemaOptions struct{ Out io.Writer }

func schemaCommand(run func(context.Context, *schemaOptions) error) *cli.Command {
	return &cli.Command{
		Name:  "schema",
		Usage: "print the JSON Schema (draft 2020-12) of the lab file, for editors",
		Description: "It is built from the parser's own key tables, so it names every key nslab reads and no other.\n" +
			"Editors with yaml-language-server (VS Code's YAML extension, Neovim, Helix) check and complete a lab file\n" +
			"whose first line names it, as every example's does:\n" +
			"  # yaml-language-server: $schema=../docs/lab.schema.json\n\n" +
			"Example: nslab schema > lab.schema.json",
		Action: action(func(c *cli.Context) (*schemaOptions, error) { return &schemaOptions{Out: c.App.Writer}, nil }, or(run, runSchema)),
	}
}

func runSchema(_ context.Context, o *schemaOptions) error {
	_, err := o.Out.Write(spec.Schema())
	return err
}
