package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/db"
)

func verifyCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("verify", "Compare the database with the expected state written by simulate.\nExit status 0 only when they match; otherwise a summary of what differs.")
	url := fs.String("database-url", db.DefaultURL, "PostgreSQL URL")
	expected := fs.String("expected", "expected.json", "expected state written by stb simulate")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	pool, err := db.Connect(ctx, *url, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	// Each profile's Verify claims its own agents' files.
	for _, p := range profiles.All() {
		if p.Verify == nil {
			continue
		}
		claimed, v, err := p.Verify(ctx, pool, *expected)
		if err != nil {
			return err
		}
		if claimed {
			return verified(v.OK, v.Summary, v.Matched)
		}
	}
	return fmt.Errorf("%s is no expected state of any profile's agents (%s)", *expected, strings.Join(profiles.AgentNames(), ", "))
}

// verified prints what `stb verify` found, every profile's the same way:
// "verify: ok: " and what matched, or MISMATCH and the summary of what
// differs, with exit status 1.
func verified(ok bool, summary, matched string) error {
	if !ok {
		fmt.Println("verify: MISMATCH")
		fmt.Println(strings.TrimRight(summary, "\n"))
		return exitError{code: 1}
	}
	fmt.Println("verify: ok: " + matched)
	return nil
}
