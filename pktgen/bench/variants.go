package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nslab/nslab/pktgen/report"
	"github.com/nslab/nslab/topology/lab"
	"github.com/nslab/nslab/topology/spec"
)

// VariantRounds is how many rounds a variant run takes when --repeat does
// not say: five of each is the fewest whose difference the Mann-Whitney U
// test can call significant at 5% (with three, its smallest p is 0.1).
const VariantRounds = 5

// eachVariant measures (or searches) the run under each variant in turn,
// round after round (A B A B ...: the machine's drift spreads over all
// alike), applying each variant before its turn, and gives the lab back
// as deployed at the end, an error or not. Each variant's results are
// then compared with the first's, as nslab compare compares files.
func (req Request) eachVariant(ctx context.Context, m *lab.Manager, r *lab.Running, out *Outcome) (err error) {
	defer func() {
		if uerr := m.ApplyVariant(context.WithoutCancel(ctx), req.Lab, spec.BaseVariant); uerr != nil {
			err = errors.Join(err, fmt.Errorf("give the lab back as deployed: %w", uerr))
		}
	}()
	files := map[string]*report.ResultsFile{}
	for _, name := range req.Variants {
		files[name] = &report.ResultsFile{Path: "variant " + name, Figures: map[report.FigureKey][]float64{}, Env: map[string]string{}, OneVariant: true}
	}
	rounds := req.Repeat
	if rounds < 2 {
		rounds = VariantRounds
	}
	for round := range rounds {
		for _, name := range req.Variants {
			req.progress("round %d/%d, variant %s: ", round+1, rounds, name)
			if err := m.ApplyVariant(ctx, req.Lab, name); err != nil {
				return err
			}
			if err := req.underVariant(ctx, r, name, files[name], out); err != nil {
				return err
			}
		}
	}
	out.Summaries = report.Summaries(&out.Results, report.SummaryLevel)
	for _, name := range req.Variants[1:] {
		c, err := report.Compare(files[req.Variants[0]], files[name], true)
		if err != nil {
			return fmt.Errorf("compare variant %s with %s: %w", name, req.Variants[0], err)
		}
		c.Ignored = nil // the same lab, kernel, engine and nslab; a placement that differs is the variant's own change
		out.Comparisons = append(out.Comparisons, c)
	}
	return nil
}

// underVariant measures every frame size once under variant name (already
// applied), and adds what finished to its results.
func (req Request) underVariant(ctx context.Context, r *lab.Running, name string, rf *report.ResultsFile, out *Outcome) error {
	o := req.Options
	o.Variant = name
	b, err := New(r.As(req.Lab.Variant(name).Lab), req.Traffic, o)
	if err != nil {
		return fmt.Errorf("variant %s: %w", name, err)
	}
	defer b.Close()
	nr, nm, ns, nf := len(out.Reports), len(out.MLR), len(out.Searches), len(out.RFC2544)
	for i, frame := range req.Traffic.Frames {
		if err := req.one(ctx, b, frame, fmt.Sprintf("[%d/%d]", i+1, len(req.Traffic.Frames)), len(req.Traffic.Frames) > 1, out); err != nil {
			return err
		}
	}
	results := append(anys(out.Reports[nr:]), anys(out.MLR[nm:])...)
	results = append(append(results, anys(out.Searches[ns:])...), anys(out.RFC2544[nf:])...)
	for _, x := range results {
		line, err := json.Marshal(x)
		if err != nil {
			return err
		}
		if err := rf.AddLine(line); err != nil {
			return fmt.Errorf("variant %s: %w", name, err)
		}
	}
	return nil
}

// checkVariants refuses, before anything changes, variants the file does
// not have, and a variant run of several streams.
func (req Request) checkVariants() error {
	if len(req.Variants) == 0 {
		return nil
	}
	if len(req.Streams) > 1 {
		return &FieldError{"variants", fmt.Errorf("variants take one traffic run; %d were named", len(req.Streams))}
	}
	if len(req.Variants) < 2 {
		return &FieldError{"variants", fmt.Errorf("%s: name two or more to compare them (%s is the lab as deployed)", req.Variants[0], spec.BaseVariant)}
	}
	seen := map[string]bool{}
	for _, v := range req.Variants {
		if req.Lab.Variant(v) == nil {
			return &FieldError{"variants", fmt.Errorf("lab %s has no variant %q (its variants: %s, and %s, the lab as deployed)", req.Lab.Name, v, joinOr(req.Lab.VariantNames(), "none"), spec.BaseVariant)}
		}
		if seen[v] {
			return &FieldError{"variants", fmt.Errorf("%s is named twice", v)}
		}
		seen[v] = true
	}
	return nil
}

func joinOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return fmt.Sprint(s)
}

// anys is xs as values of any.
func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
