package spec

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"
)

// A teacher's lab file holds the tests: a student's lab is graded by;
// the student's own file, or the teacher's file beside the student's
// node configs, is the lab. WithTests puts the teacher's tests into the
// student's file, and a test the student's lab cannot even be asked
// (a node it lacks) becomes a failed test, not a refused file.

// WithTests is lab file sub with its tests: those of lab file teacher.
func WithTests(sub, teacher []byte) ([]byte, error) {
	var s, t yaml.Node
	if err := yaml.Unmarshal(sub, &s); err != nil || len(s.Content) == 0 || s.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("the submission is not a lab file (a YAML mapping): %v", err)
	}
	if err := yaml.Unmarshal(teacher, &t); err != nil || len(t.Content) == 0 {
		return nil, fmt.Errorf("the teacher's file is not YAML: %w", err)
	}
	tests := MappingValue(t.Content[0], "tests")
	if tests == nil {
		return nil, errors.New("the teacher's file has no tests: section")
	}
	m := s.Content[0]
	if v := MappingValue(m, "tests"); v != nil {
		*v = *tests
	} else {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "tests"}, tests)
	}
	return yaml.Marshal(&s)
}

// WithoutTests is lab file data without the tests of the given indexes.
func WithoutTests(data []byte, drop []int) ([]byte, error) {
	var d yaml.Node
	if err := yaml.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	v := MappingValue(d.Content[0], "tests")
	if v == nil {
		return data, nil
	}
	var keep []*yaml.Node
	for i, item := range v.Content {
		if !slices.Contains(drop, i) {
			keep = append(keep, item)
		}
	}
	v.Content = keep
	return yaml.Marshal(&d)
}

var testPath = regexp.MustCompile(`^tests\[(\d+)\]`)

// TestProblems splits a parse error into the problems of tests (by the
// test's index) and the rest (nil when every problem is a test's).
func TestProblems(err error) (map[int][]string, error) {
	var ps Problems
	if !errors.As(err, &ps) {
		return nil, err
	}
	byTest, rest := map[int][]string{}, Problems{}
	for _, p := range ps {
		if m := testPath.FindStringSubmatch(p.Path); m != nil {
			i, _ := strconv.Atoi(m[1])
			byTest[i] = append(byTest[i], p.Path+": "+p.Msg)
			continue
		}
		rest = append(rest, p)
	}
	if len(rest) > 0 {
		return byTest, rest
	}
	return byTest, nil
}

// ReadTests reads only the name: and tests: of a teacher's lab file,
// checking each test's own syntax (not what it names: the lab it runs in
// is a student's). The teacher's file may need the student's node
// configs to be a lab at all.
func ReadTests(path string) (*Lab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the teacher's file: %w", err)
	}
	r := &reporter{file: path, where: map[string]pos{}}
	lab := &Lab{File: path, Source: data}
	root := r.decodeDocument(data)
	if root == nil {
		return nil, r.probs.sorted()
	}
	for _, e := range r.entries(root, "", "a lab file") {
		e.path = e.key
		switch e.key {
		case "name":
			lab.Name, _ = r.str(e.v, e.key, "the lab's name")
		case "tests":
			r.parseTests(e, lab)
		}
	}
	if len(lab.Tests) == 0 && len(r.probs) == 0 {
		r.errf("tests", "the teacher's file has no tests: to grade by")
	}
	if len(r.probs) > 0 {
		return nil, r.probs.sorted()
	}
	return lab, nil
}

// WithName is lab file data with the lab's name and namespace prefix set
// to name and name + "-": a copy that deploys as a lab of its own beside
// any other (a submission graded on a fresh lab, never on one deployed
// under the exercise's name).
func WithName(data []byte, name string) ([]byte, error) {
	var d yaml.Node
	if err := yaml.Unmarshal(data, &d); err != nil || len(d.Content) == 0 || d.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a lab file (a YAML mapping): %v", err)
	}
	m := d.Content[0]
	for key, value := range map[string]string{"name": name, "prefix": name + "-"} {
		if v := MappingValue(m, key); v != nil {
			*v = yaml.Node{Kind: yaml.ScalarNode, Value: value}
		} else {
			m.Content = append([]*yaml.Node{{Kind: yaml.ScalarNode, Value: key}, {Kind: yaml.ScalarNode, Value: value}}, m.Content...)
		}
	}
	return yaml.Marshal(&d)
}
