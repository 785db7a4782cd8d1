package main

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestBenchProduce: the bench's producer process is the subcommand
// `stb bench produce`, with its own help; the hidden flag it replaced is
// gone, so no STB_INTERNAL_PRODUCER in the environment turns `stb bench`
// into a producer.
func TestBenchProduce(t *testing.T) {
	if err := benchCmd(t.Context(), []string{"produce", "--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("stb bench produce --help: %v, want its help", err)
	}
	if err := benchCmd(t.Context(), []string{"produce", "extra"}); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("stb bench produce extra: %v, want an error", err)
	}
	if err := benchCmd(t.Context(), []string{"--internal-producer", "{}"}); err == nil || !strings.Contains(err.Error(), "not defined") {
		t.Errorf("stb bench --internal-producer: %v, want an undefined flag", err)
	}
}
