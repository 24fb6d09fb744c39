package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nslab/nslab/pktgen/bench/search"
	"github.com/nslab/nslab/pktgen/mlr"
)

// parseGoal reads an MLRsearch goal from a --goal value:
// name=NDR,loss=0,exceed=50%,final=1s,sum=7s,width=2%,initial=250ms; what
// it leaves out is the default goal's (DefaultGoals[0]) and the name is
// made from the loss when not given.
func parseGoal(s string) (mlr.Goal, error) {
	g := search.DefaultGoals[0]
	g.Name = ""
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return g, fmt.Errorf("%q: give key=value pairs, e.g. loss=0.5%%,exceed=50%%,final=1s,sum=7s", kv)
		}
		var err error
		switch k {
		case "name":
			g.Name = v
		case "loss":
			g.LossRatio, err = ratio(v)
		case "exceed":
			if g.ExceedRatio, err = ratio(v); err == nil && g.ExceedRatio >= 1 {
				err = fmt.Errorf("below 100%%")
			}
		case "width":
			g.Width, err = ratio(v)
		case "final":
			g.FinalTrial, err = positive(v)
		case "sum":
			g.DurationSum, err = positive(v)
		case "initial":
			g.InitialTrial, err = positive(v)
		default:
			return g, fmt.Errorf("%q: unknown key (use name, loss, exceed, final, sum, width, initial)", k)
		}
		if err != nil {
			return g, fmt.Errorf("%s=%s: %w", k, v, err)
		}
	}
	if g.Name == "" {
		g.Name = "loss " + strconv.FormatFloat(100*g.LossRatio, 'g', -1, 64) + "%"
	}
	return g, nil
}

func ratio(v string) (float64, error) {
	f, err := parsePercent(v)
	if err == nil && (f < 0 || f > 1) {
		err = fmt.Errorf("between 0 and 100%%")
	}
	return f, err
}

func positive(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err == nil && d <= 0 {
		err = fmt.Errorf("a positive duration such as 1s")
	}
	return d, err
}
