package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nslab/nslab/pktgen/bench"
)

// TestFlagWords: the field a library's error names is the flag here.
func TestFlagWords(t *testing.T) {
	err := fmt.Errorf("lab x: %w", &bench.FieldError{Field: "rate", Err: errors.New(`"fast": use max`)})
	if got, want := flagWords(err), `lab x: --rate: "fast": use max`; got != want {
		t.Errorf("flagWords = %q; want %q", got, want)
	}
	if got := flagWords(errors.New("plain")); got != "plain" {
		t.Errorf("flagWords of a plain error = %q", got)
	}
}
