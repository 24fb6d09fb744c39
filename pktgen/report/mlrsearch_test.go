package report

import (
	"strings"
	"testing"
	"time"
)

// TestMLRTrialLossIsAgainstTheLoad: a trial that received all it sent
// but sent less than its load asked shows its loss under a header that
// says it is of the load, with the line that says why.
func TestMLRTrialLossIsAgainstTheLoad(t *testing.T) {
	rep := &Report{Sent: 96142, Received: 96142, Elapsed: time.Second}
	loss := rep.LossAgainst(100000)
	r := &MLRResult{Frame: 64, Engine: "userspace", Trials: []MLRTrial{{LoadPPS: 100000, DurationS: 1, LossRatio: loss, Report: rep}}}
	var out strings.Builder
	if err := writeMLR(&out, "table", []*MLRResult{r}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "loss % of load") || !strings.Contains(s, "frames the sender did not send included") {
		t.Errorf("the trials' loss is not said to be against the load:\n%s", s)
	}
	if !strings.Contains(s, "3.858") {
		t.Errorf("a trial that sent 96142 of 100000 and received them all: its loss of the load (3.858%%) not shown:\n%s", s)
	}
}
