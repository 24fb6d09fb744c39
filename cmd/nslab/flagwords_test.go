package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nslab/nslab/pktgen/bench"
	"github.com/nslab/nslab/topology/lab/state"
)

// TestFlagWords: the field a library's error names is the flag here.
func TestFlagWords(t *testing.T) {
	err := fmt.Errorf("lab x: %w", &bench.FieldError{Field: "rate", Err: errors.New(`"fast": use max`)})
	if got, want := flagWords(err), `lab x: --rate: "fast": use max`; got != want {
		t.Errorf("flagWords = %q; want %q", got, want)
	}
	damaged := fmt.Errorf("destroy: %w", &state.DamagedStateError{Lab: "crs", Path: "/run/nslab/crs.json", Problem: "truncated"})
	if got := flagWords(damaged); !strings.HasSuffix(got, "(nslab destroy --name crs)") {
		t.Errorf("flagWords of a damaged state = %q; want the destroy command last", got)
	}
	if got := flagWords(errors.New("plain")); got != "plain" {
		t.Errorf("flagWords of a plain error = %q", got)
	}
}
