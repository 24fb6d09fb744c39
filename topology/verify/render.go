package verify

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/nslab/nslab/internal/fold"
)

// Outcomes are a run's results, in the file's order.
type Outcomes []Outcome

// Passed counts the tests that passed.
func (res Outcomes) Passed() int {
	n := 0
	for _, o := range res {
		if o.Pass {
			n++
		}
	}
	return n
}

// Score is the points scored and the points there were.
func (res Outcomes) Score() (scored, total int) {
	for _, o := range res {
		scored += o.Scored
		total += o.Points
	}
	return scored, total
}

// Summary is the run in a line.
func (res Outcomes) Summary(lab string) string {
	scored, total := res.Score()
	return fmt.Sprintf("lab %s: %d of %d tests passed, %d failed; %d of %d points", lab, res.Passed(), len(res), len(res)-res.Passed(), scored, total)
}

// WriteTable writes a table: each test, its result, what was measured,
// what was expected, where, and how long it waited. When that row would
// be wider than fold.Width, what was measured and expected go on a line
// of their own under the test's row, so that no line is wider than a
// terminal.
func (res Outcomes) WriteTable(w io.Writer) {
	var wide bytes.Buffer
	res.writeRows(&wide, true)
	for _, l := range strings.Split(wide.String(), "\n") {
		if utf8.RuneCountInString(l) > fold.Width {
			res.writeRows(w, false)
			return
		}
	}
	_, _ = w.Write(wide.Bytes())
}

// writeRows writes the table, with what was measured and expected in
// columns (inline) or on a line under each row.
func (res Outcomes) writeRows(w io.Writer, inline bool) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	if inline {
		fmt.Fprintln(tw, "TEST\tRESULT\tMEASURED\tEXPECTED\tWHERE\tTRIES\tWAITED")
	} else {
		fmt.Fprintln(tw, "TEST\tRESULT\tWHERE\tTRIES\tWAITED")
	}
	for _, o := range res {
		took := o.Took.Round(time.Millisecond)
		if inline {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", o.Name, passWord(o.Pass), o.Measured, o.Expected, o.Where, o.Tries, took)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", o.Name, passWord(o.Pass), o.Where, o.Tries, took)
		}
	}
	tw.Flush()
	if inline {
		_, _ = w.Write(b.Bytes())
		return
	}
	// the rows aligned as one table, each followed by its own line
	rows := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	fmt.Fprintln(w, rows[0])
	for i, o := range res {
		fmt.Fprintf(w, "%s\n  measured %s; expected %s\n", rows[i+1], o.Measured, o.Expected)
	}
}

func passWord(p bool) string {
	if p {
		return "PASS"
	}
	return "FAIL"
}

// WriteFailures says, for each failed test, what was expected, what was
// measured and where.
func (res Outcomes) WriteFailures(w io.Writer) {
	for _, o := range res {
		if !o.Pass {
			fmt.Fprintf(w, "FAIL %s (%s): expected %s, measured %s\n", o.Name, o.Where, o.Expected, o.Measured)
		}
	}
}

// WriteTAP writes the results as TAP version 13, each failure with a
// YAML block of what was expected and measured.
func (res Outcomes) WriteTAP(w io.Writer) {
	fmt.Fprintf(w, "TAP version 13\n1..%d\n", len(res))
	for i, o := range res {
		ok := "ok"
		if !o.Pass {
			ok = "not ok"
		}
		fmt.Fprintf(w, "%s %d - %s\n", ok, i+1, o.Name)
		if !o.Pass {
			fmt.Fprintf(w, "  ---\n  where: %q\n  expected: %q\n  measured: %q\n  tries: %d\n  ...\n", o.Where, o.Expected, o.Measured, o.Tries)
		}
	}
}

// junitSuites is JUnit XML as CI systems read it (Jenkins, GitLab,
// GitHub's test reporters): a suite per lab, a case per test, a failure
// element for each failed test.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     junitTime    `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      junitTime   `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      junitTime     `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junitTime is a duration in seconds as JUnit's schema wants it: digits
// and a decimal point, never Go's 1e-06.
type junitTime float64

// MarshalXMLAttr writes t with millisecond digits.
func (t junitTime) MarshalXMLAttr(name xml.Name) (xml.Attr, error) {
	return xml.Attr{Name: name, Value: strconv.FormatFloat(float64(t), 'f', 3, 64)}, nil
}

// UnmarshalXMLAttr reads it back.
func (t *junitTime) UnmarshalXMLAttr(a xml.Attr) error {
	f, err := strconv.ParseFloat(a.Value, 64)
	*t = junitTime(f)
	return err
}

// WriteJUnit writes the results as JUnit XML, one suite for lab.
func (res Outcomes) WriteJUnit(w io.Writer, lab string, started time.Time) error {
	s := junitSuite{Name: lab, Tests: len(res), Failures: len(res) - res.Passed(), Timestamp: started.UTC().Format("2006-01-02T15:04:05")}
	for _, o := range res {
		c := junitCase{Name: o.Name, Classname: "nslab." + lab + "." + o.Kind, Time: junitTime(o.Took.Seconds()), SystemOut: "measured: " + o.Measured}
		if !o.Pass {
			c.Failure = &junitFailure{Message: fmt.Sprintf("expected %s, measured %s", o.Expected, o.Measured), Type: o.Kind,
				Text: fmt.Sprintf("where: %s\nexpected: %s\nmeasured: %s\ntries: %d", o.Where, o.Expected, o.Measured, o.Tries)}
		}
		s.Time += c.Time
		s.Cases = append(s.Cases, c)
	}
	out := junitSuites{Name: "nslab test", Tests: s.Tests, Failures: s.Failures, Time: s.Time, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write JUnit XML: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}
