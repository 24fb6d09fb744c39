package importlab

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Test is a test of the lab file (one entry of tests:), as its key and
// value: a kind ("address", "route", "reachable") and what it checks.
type Test struct {
	Kind  string
	Value any    // a string, or a map of the kind's keys
	Wait  string // "" or a duration
}

// checkerFile is a kathara-lab-checker configuration: its tests by kind.
// JSON, which yaml.v3 reads too (the checker takes YAML as well).
type checkerFile struct {
	ConvergenceTime int                  `yaml:"convergence_time"`
	Structure       string               `yaml:"structure"`
	Test            map[string]yaml.Node `yaml:"test"`
}

// CheckerStructure is the lab.conf a checker configuration names as the
// lab's structure (the topology the exercise asks for), found relative
// to the exercise (the directory above the configuration's) or to the
// configuration; "" when it names none or none is there.
func CheckerStructure(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var cf checkerFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if cf.Structure == "" {
		return "", nil
	}
	for _, base := range []string{filepath.Dir(filepath.Dir(path)), filepath.Dir(path)} {
		p := filepath.Join(base, cf.Structure)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", nil
}

// FindCheckers are the lab checker's configuration files of the Kathara
// lab in dir: solution/*.json (or .yaml) in it or beside it (Kathara's
// exercises keep the lab in lab/ and the solution in ../solution).
func FindCheckers(dir string) ([]string, error) {
	var out []string
	for _, d := range []string{filepath.Join(dir, "solution"), filepath.Join(dir, "..", "solution")} {
		for _, ext := range []string{"*.json", "*.yaml", "*.yml"} {
			m, err := filepath.Glob(filepath.Join(d, ext))
			if err != nil {
				return nil, err
			}
			out = append(out, m...)
		}
	}
	return out, nil
}

// Checker reads a kathara-lab-checker configuration into the lab's tests:
// ip_mapping (an interface's address), kernel_routes (a route, with its
// next hops where given) and reachability (an echo answered), each tried
// until the checker's convergence time passes. What it checks that nslab
// tests do not (requiring_startup, daemons, protocols, applications) is
// named in Dropped.
func (l *Lab) Checker(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cf checkerFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if cf.Test == nil {
		return fmt.Errorf("%s: no test: a kathara-lab-checker configuration has its tests under test", path)
	}
	l.CheckerFrom = append(l.CheckerFrom, path)
	wait := ""
	if cf.ConvergenceTime > 0 {
		wait = fmt.Sprintf("%ds", cf.ConvergenceTime)
	}
	name := filepath.Base(path)
	for _, kind := range sortedKeys(cf.Test) {
		v := cf.Test[kind]
		var err error
		switch kind {
		case "ip_mapping":
			err = l.ipMapping(&v, wait)
		case "kernel_routes":
			err = l.kernelRoutes(&v, wait)
		case "reachability":
			err = l.reachability(&v, wait)
		case "requiring_startup":
			l.drop("%s's requiring_startup: that the startup files exist (nslab tests what they do)", name)
		default:
			l.drop("%s's test %s: no nslab test checks it", name, kind)
		}
		if err != nil {
			return fmt.Errorf("%s: test.%s: %w", path, kind, err)
		}
	}
	return nil
}

// ipMapping: {node: {interface index: address/length}}.
func (l *Lab) ipMapping(v *yaml.Node, wait string) error {
	var m map[string]map[string]string
	if err := v.Decode(&m); err != nil {
		return err
	}
	for _, node := range sortedKeys(m) {
		for _, idx := range sortedIndexes(m[node]) {
			addr := m[node][idx]
			if _, err := netip.ParsePrefix(addr); err != nil {
				return fmt.Errorf("%s's %s: %w", node, idx, err)
			}
			l.Tests = append(l.Tests, Test{Kind: "address", Wait: wait, Value: [][2]string{{"node", node}, {"interface", "eth" + idx}, {"address", addr}}})
		}
	}
	return nil
}

// kernelRoutes: {node: [prefix, or [prefix, [next hop addresses or
// interfaces]]]}.
func (l *Lab) kernelRoutes(v *yaml.Node, wait string) error {
	var m map[string][]yaml.Node
	if err := v.Decode(&m); err != nil {
		return err
	}
	for _, node := range sortedKeys(m) {
		for _, e := range m[node] {
			var to string
			var hops []string
			switch e.Kind {
			case yaml.ScalarNode:
				to = e.Value
			case yaml.SequenceNode:
				if len(e.Content) != 2 || e.Content[0].Kind != yaml.ScalarNode {
					return fmt.Errorf("%s: line %d: a route is a prefix or [prefix, [next hops]]", node, e.Line)
				}
				to = e.Content[0].Value
				if err := e.Content[1].Decode(&hops); err != nil {
					return fmt.Errorf("%s: line %d: %w", node, e.Line, err)
				}
			default:
				return fmt.Errorf("%s: line %d: a route is a prefix or [prefix, [next hops]]", node, e.Line)
			}
			p, err := netip.ParsePrefix(to)
			if err != nil {
				return fmt.Errorf("%s: %w", node, err)
			}
			if p.Bits() == 0 {
				to = "default"
			}
			kv := [][2]string{{"node", node}, {"to", to}}
			if len(hops) > 0 {
				// One test checks one next hop; a route of several is
				// checked by the first (nslab's route test has one via).
				if a, err := netip.ParseAddr(hops[0]); err == nil {
					kv = append(kv, [2]string{"via", a.String()})
				} else {
					kv = append(kv, [2]string{"dev", hops[0]})
				}
			}
			l.Tests = append(l.Tests, Test{Kind: "route", Wait: wait, Value: kv})
		}
	}
	return nil
}

// reachability: {node: [addresses]}.
func (l *Lab) reachability(v *yaml.Node, wait string) error {
	var m map[string][]string
	if err := v.Decode(&m); err != nil {
		return err
	}
	for _, node := range sortedKeys(m) {
		for _, to := range m[node] {
			if _, err := netip.ParseAddr(to); err != nil {
				return fmt.Errorf("%s: %w", node, err)
			}
			l.Tests = append(l.Tests, Test{Kind: "reachable", Wait: wait, Value: node + " -> " + to})
		}
	}
	return nil
}

// sortedIndexes are m's keys, interface indexes, in number order.
func sortedIndexes(m map[string]string) []string {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool {
		a, errA := strconv.Atoi(keys[i])
		b, errB := strconv.Atoi(keys[j])
		if errA != nil || errB != nil {
			return keys[i] < keys[j]
		}
		return a < b
	})
	return keys
}

// yaml is the test as an entry of tests:.
func (t Test) yaml() *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	switch v := t.Value.(type) {
	case string:
		add(m, t.Kind, scalar(v))
	case [][2]string:
		inner := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		for _, kv := range v {
			add(inner, kv[0], scalar(kv[1]))
		}
		add(m, t.Kind, inner)
	}
	if t.Wait != "" {
		add(m, "wait", scalar(t.Wait))
	}
	return m
}

// testsComment heads the tests: the checker they came from.
func testsComment(from []string) string {
	return "the lab checker's expectations (" + strings.Join(from, ", ") + "), as tests: nslab test and grade run them"
}
