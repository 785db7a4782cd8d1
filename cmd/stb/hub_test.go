package main

import (
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestHubHelpTouchesNothing: --help (or -h) after the action prints the
// usage and connects to nothing; it used to be taken for the hub's name,
// and `stb hub delete --help` deleted a hub named "--help" (issue 21). A
// name that starts with '-' is refused; flags go before or after NAME.
func TestHubHelpTouchesNothing(t *testing.T) {
	unreachable := "postgres://stb@127.0.0.1:1/nothing?connect_timeout=1"
	ctx := context.Background()
	for _, args := range [][]string{
		{"delete", "--help"}, {"reset", "-h"}, {"--help"}, {"help"},
		{"delete", "--database-url", unreachable, "--help"},
		{"delete", "hub-a", "--help"},
	} {
		if err := hubCmd(ctx, args); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("stb hub %s: %v, want the usage (flag.ErrHelp)", strings.Join(args, " "), err)
		}
	}
	for _, args := range [][]string{{"delete", "--", "-x"}, {"delete"}, {"remove", "hub-a"}} {
		err := hubCmd(ctx, args)
		if err == nil || !strings.Contains(err.Error(), "usage: stb hub") {
			t.Errorf("stb hub %s: %v, want a usage error", strings.Join(args, " "), err)
		}
	}
	// A real request, with the URL after NAME and before it: both reach
	// the (unreachable) database.
	for _, args := range [][]string{
		{"delete", "hub-a", "--database-url", unreachable},
		{"reset", "--database-url", unreachable, "hub-a"},
	} {
		err := hubCmd(ctx, args)
		if err == nil || errors.Is(err, flag.ErrHelp) || strings.Contains(err.Error(), "usage:") {
			t.Errorf("stb hub %s: %v, want a connection error", strings.Join(args, " "), err)
		}
	}
}

// TestDeadLettersHelp: `stb deadletters --help` prints the usage instead of
// "unknown deadletters command".
func TestDeadLettersHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		if err := deadLettersCmd(context.Background(), []string{arg}); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("stb deadletters %s: %v, want the usage", arg, err)
		}
	}
}
