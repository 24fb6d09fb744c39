package spec

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite docs/lab-file.md and docs/lab.schema.json")

// compiledSchema compiles Schema as draft 2020-12 (which checks it is one).
func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// asJSON reads YAML as the JSON value a schema validates.
func asJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExamplesMatchTheSchema: every example validates against the schema
// and names it in its first line.
func TestExamplesMatchTheSchema(t *testing.T) {
	s := compiledSchema(t)
	files, _ := filepath.Glob("../../examples/*.yaml")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(asJSON(t, data)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if !bytes.HasPrefix(data, []byte("# yaml-language-server: $schema=../docs/lab.schema.json\n")) {
			t.Errorf("%s does not start with the yaml-language-server modeline", f)
		}
	}
}

// TestSchemaRefusesWhatTheParserRefuses: structural errors a schema can
// see (unknown keys, wrong types, ranges, words) are refused by both.
func TestSchemaRefusesWhatTheParserRefuses(t *testing.T) {
	s := compiledSchema(t)
	for name, yml := range map[string]string{
		"unknown top key":    base + "colour: red\n",
		"unknown node key":   strings.Replace(base, "  a:\n", "  a:\n    forwarder: true\n", 1),
		"mtu as text":        strings.Replace(base, "10.0.1.1/24]}", "10.0.1.1/24], mtu: \"1500\"}", 1),
		"mtu range":          strings.Replace(base, "10.0.1.1/24]}", "10.0.1.1/24], mtu: 10}", 1),
		"receive word":       strings.Replace(base, "  a:\n", "  a:\n    cpus: [0]\n    receive: xdp\n", 1),
		"vlan id range":      strings.Replace(base, "      e0: {addresses: [10.0.1.1/24]}\n", "      e0: {addresses: [10.0.1.1/24]}\n      v: {vlan: {parent: e0, id: 5000}}\n", 1),
		"bond mode":          strings.Replace(base, "      e0: {addresses: [10.0.1.1/24]}\n", "      e0: {}\n      b: {bond: {ports: [e0], mode: fast}}\n", 1),
		"rule without table": strings.Replace(base, "  a:\n", "  a:\n    rules: [{from: 10.0.2.0/24}]\n", 1),
		"link of three":      strings.Replace(base, "[a:e0, b:e0]", "[a:e0, b:e0, a:e1]", 1),
		"nat of two kinds":   strings.Replace(base, "  a:\n", "  a:\n    nat: [{masquerade: e0, snat: {to: 10.0.1.1}}]\n", 1),
		"traffic engine":     base + "traffic: [{name: f, from: a:e0, to: 10.0.1.2, engine: dpdk}]\n",
		"missing name":       strings.Replace(base, "name: t\n", "", 1),
		"route without to":   strings.Replace(base, "  a:\n", "  a:\n    routes: [{via: 10.0.1.2}]\n", 1),
		"filter verdict":     strings.Replace(base, "  a:\n", "  a:\n    firewall: [{reject: {in: e0}}]\n", 1),
		"bridge vlans shape": strings.Replace(base, "  b:\n", "  b:\n    bridges: {br0: {ports: [e1], vlan_filtering: true, vlans: {e1: 10}}}\n", 1),
	} {
		if _, err := Parse("x.yaml", []byte(yml)); err == nil {
			t.Errorf("%s: the parser takes it", name)
		}
		if err := s.Validate(asJSON(t, []byte(yml))); err == nil {
			t.Errorf("%s: the schema takes it", name)
		}
	}
}

// TestParserKeysAreTheTables: every mapping the parser reads takes its
// keys from the schema's tables, so a key added to the parser is in the
// schema and the docs.
func TestParserKeysAreTheTables(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fromTable := regexp.MustCompile(`(keysOf\(\w+\)|\w+Keys(\[\w+\])?)\.\.\.\)`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, _ := os.ReadFile(f)
		for n, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "r.fields(") && !fromTable.MatchString(line) {
				t.Errorf("%s:%d: %s names its keys itself: take them from a mapping of schema.go", f, n+1, strings.TrimSpace(line))
			}
		}
	}
	var doc map[string]any
	if err := json.Unmarshal(Schema(), &doc); err != nil {
		t.Fatal(err)
	}
	defs := doc["$defs"].(map[string]any)
	for _, m := range mappings {
		props := defs[m.def].(map[string]any)["properties"].(map[string]any)
		var got []string
		for k := range props {
			got = append(got, k)
		}
		want := keysOf(*m)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: schema has %v, the parser %v", m.def, got, want)
		}
	}
}

// TestLabFileDoc: docs/lab-file.md and docs/lab.schema.json are what the
// tables give (go test -run TestLabFileDoc -update rewrites them).
func TestLabFileDoc(t *testing.T) {
	for path, want := range map[string]string{"../../docs/lab-file.md": LabFileDoc(), "../../docs/lab.schema.json": string(Schema())} {
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s is not what the parser's tables give (%v): go test ./topology/spec -run TestLabFileDoc -update", path, err)
		}
	}
	for _, m := range mappings {
		for _, k := range m.keys {
			if !strings.Contains(LabFileDoc(), "| `"+k.name+"` |") {
				t.Errorf("docs/lab-file.md has no row for %s.%s", m.def, k.name)
			}
		}
	}
}
