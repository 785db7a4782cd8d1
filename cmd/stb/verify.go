package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/sim"
	cnesim "github.com/stbridge/stb/pkg/sim/cne"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/verify"
)

func verifyCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("verify", "Compare the database with the expected state written by simulate.\nExit status 0 only when they match; otherwise a summary of what differs.")
	url := fs.String("database-url", db.DefaultURL, "PostgreSQL URL")
	expected := fs.String("expected", "expected.json", "expected state written by stb simulate")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if exp, ok, err := cnesim.ReadExpected(*expected); err != nil || ok {
		if err != nil {
			return err
		}
		return verifyCNE(ctx, *url, exp)
	}
	wexp, isWork, err := simwork.ReadExpected(*expected)
	if err != nil {
		return err
	}
	var exp *sim.Expected
	if !isWork {
		if exp, err = sim.ReadExpected(*expected); err != nil {
			return err
		}
	}
	pool, err := db.Connect(ctx, *url, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	if isWork {
		return verifyWork(ctx, pool, wexp)
	}
	rep, err := verify.Verify(ctx, pool, exp)
	if err != nil {
		return err
	}
	return verified(rep.OK(), rep.Summary(), fmt.Sprintf("%d hubs, %d versions, %d managed clusters match", rep.Hubs, rep.Versions, rep.Clusters))
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
