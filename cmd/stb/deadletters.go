package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stbridge/stb/internal/humanize"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/internal/replay"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/deadletter"
)

const deadLettersUsage = `usage: stb deadletters list|replay|purge [flags]
  list     print the dead letters (--reason, --hub, --since; --json)
  replay   decode each again and write it through the version fence (--dry-run to see what would happen)
  purge    delete the dead letters stored before --before`

func deadLettersCmd(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", deadLettersUsage)
	}
	if isHelp(args[0]) {
		fmt.Println(deadLettersUsage)
		return flag.ErrHelp
	}
	switch args[0] {
	case "list":
		return deadLettersList(ctx, args[1:])
	case "replay":
		return deadLettersReplay(ctx, args[1:])
	case "purge":
		return deadLettersPurge(ctx, args[1:])
	}
	return fmt.Errorf("unknown deadletters command %q\n%s", args[0], deadLettersUsage)
}

// letterFilter binds the flags that select dead letters.
type letterFilter struct {
	url, reason, hub, since string
}

func (l *letterFilter) bind(fs *flag.FlagSet) {
	fs.StringVar(&l.url, "database-url", db.DefaultURL, "PostgreSQL URL")
	fs.StringVar(&l.reason, "reason", "", "only letters of this reason (too_large, bad_payload, …)")
	fs.StringVar(&l.hub, "hub", "", "only letters of this hub")
	fs.StringVar(&l.since, "since", "", "only letters stored since: a duration ago (24h) or a time (2026-11-24T10:00:00Z)")
}

func (l *letterFilter) filter(now time.Time) (deadletter.Filter, error) {
	f := deadletter.Filter{Reason: deadletter.Reason(l.reason), Hub: l.hub}
	if l.since != "" {
		t, err := parseWhen(l.since, now)
		if err != nil {
			return f, fmt.Errorf("--since: %w", err)
		}
		f.Since = t
	}
	return f, nil
}

// parseWhen reads a time as a duration before now or an RFC 3339 time.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (24h) nor a time (2026-11-24T10:00:00Z)", s)
	}
	return t, nil
}

func deadLettersList(ctx context.Context, args []string) error {
	var l letterFilter
	fs := newFlagSet("deadletters list", "Print the dead letters, oldest first: id, when, reason, hub, type, version, origin, replay outcome and error.")
	l.bind(fs)
	asJSON := fs.Bool("json", false, "print JSON, one object per letter, with its headers and data")
	limit := fs.Int("limit", 1000, "print at most this many; 0 prints all")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	f, err := l.filter(time.Now())
	if err != nil {
		return err
	}
	f.Limit = *limit
	pool, err := db.Connect(ctx, l.url, 1)
	if err != nil {
		return err
	}
	defer pool.Close()
	rows, err := deadletter.List(ctx, pool, f)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		for _, r := range rows {
			if err := enc.Encode(letterJSON(r)); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSTORED\tREASON\tHUB\tTYPE\tVERSION\tORIGIN\tDATA\tREPLAY\tERROR")
	for _, r := range rows {
		replayed := "-"
		if r.ReplayOutcome != deadletter.NotReplayed {
			replayed = string(r.ReplayOutcome) + " " + r.ReplayedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s/%d@%d\t%s\t%s\t%s\n", r.ID, r.CreatedAt.UTC().Format(time.RFC3339), r.Reason,
			deadletter.Quote(r.Hub), deadletter.Quote(r.Type), deadletter.Quote(r.Version), r.Origin.Topic, r.Origin.Partition, r.Origin.Offset,
			humanize.Bytes(int64(len(r.Data))), replayed, deadletter.FirstLine(r.Error, 100))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if f.Limit > 0 && len(rows) == f.Limit {
		fmt.Fprintf(os.Stderr, "stb deadletters list: the first %d shown; --limit 0 shows all\n", f.Limit)
	}
	return nil
}

func letterJSON(r deadletter.Row) map[string]any {
	out := map[string]any{
		"id": r.ID, "storedAt": r.CreatedAt, "reason": r.Reason, "error": r.Error,
		"hub": r.Hub, "type": r.Type, "version": r.Version,
		"topic": r.Origin.Topic, "partition": r.Origin.Partition, "offset": r.Origin.Offset,
		"headers": r.Headers, "replayOutcome": r.ReplayOutcome,
	}
	if json.Valid(r.Data) {
		out["data"] = json.RawMessage(r.Data)
	} else {
		out["dataBase64"] = r.Data
	}
	if !r.ReplayedAt.IsZero() {
		out["replayedAt"] = r.ReplayedAt
	}
	return out
}

func deadLettersReplay(ctx context.Context, args []string) error {
	var l letterFilter
	cfg := replay.DefaultConfig()
	fs := newFlagSet("deadletters replay", "Decode the selected dead letters again and write each through the version fence, as the bridge would:\n"+
		"after the cause is fixed (a larger --max-bundle-bytes, a new release). Each event is fetched from Kafka at its\n"+
		"origin while the topic holds it, else taken from the stored copy when that is the whole event. A letter that\n"+
		"applies is marked applied; one the database already holds as new is marked stale (nothing written); one that\n"+
		"fails again keeps its row with the new reason. Letters already applied or stale are not replayed again.")
	l.bind(fs)
	fs.StringVar(&cfg.Reader.Brokers, "kafka-brokers", "", "Kafka bootstrap servers to fetch the events from; empty uses the stored copies only")
	fs.Var(propertyFlag(cfg.Reader.Properties), "kafka-property", "extra librdkafka property key=value (repeatable), e.g. security.protocol=SASL_SSL")
	fs.Var((*intByteSize)(&cfg.Reader.MaxBundleBytes), "max-bundle-bytes", "largest event data accepted (raise it to replay too_large letters)")
	fs.StringVar(&cfg.Reader.TypePrefix, "type-prefix", cfg.Reader.TypePrefix, "CloudEvents type prefix, as the bridge's")
	fs.BoolVar(&cfg.Reader.VerifySource, "verify-source", cfg.Reader.VerifySource, "reject events whose source is not the Kafka message key, as the bridge does")
	fs.Var(newListValue(&cfg.Profiles, cfg.Profiles), "profiles", "wire formats read, comma-separated: "+strings.Join(profiles.Names(), ", "))
	fs.BoolVar(&cfg.DryRun, "dry-run", false, "show what each replay would do; write and mark nothing")
	limit := fs.Int("limit", 0, "replay at most this many letters; 0 replays every letter selected")
	after := fs.Int64("after", 0, "start after this letter id (where a replay with --limit stopped)")
	fs.IntVar(&cfg.PageSize, "page-size", replay.DefaultPageSize, "letters loaded from the database at a time (memory holds one page of up to 64 KiB each)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	f, err := l.filter(time.Now())
	if err != nil {
		return err
	}
	if *limit < 0 || *after < 0 || cfg.PageSize <= 0 {
		return fmt.Errorf("--limit and --after must not be negative, --page-size must be positive")
	}
	f.Limit, f.After = *limit, *after
	cfg.Filter = f
	logger, err := newLogger("warn", "console")
	if err != nil {
		return err
	}
	pool, err := db.Connect(ctx, l.url, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	counts := map[deadletter.ReplayOutcome]int{}
	verb := "replay"
	if cfg.DryRun {
		verb = "dry run"
	}
	prog, err := replay.Run(ctx, pool, cfg, logger, func(r replay.Result) {
		counts[r.Outcome]++
		fmt.Println(r.Line(verb))
	})
	fmt.Printf("%s: %d applied, %d stale (nothing written), %d failed again, %d skipped (event gone)\n", verb,
		counts[deadletter.ReplayApplied], counts[deadletter.ReplayStale], counts[deadletter.ReplayFailed], counts[deadletter.ReplaySkipped])
	if prog.Remaining > 0 {
		fmt.Printf("%s: stopped at --limit %d; %d more letters selected after id %d (--after %d goes on)\n", verb,
			f.Limit, prog.Remaining, prog.Last, prog.Last)
	}
	return err
}

func deadLettersPurge(ctx context.Context, args []string) error {
	var l letterFilter
	fs := newFlagSet("deadletters purge", "Delete the dead letters stored before --before (and matching the other filters).")
	l.bind(fs)
	before := fs.String("before", "", "required: delete letters stored before this, a duration ago (720h) or a time")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *before == "" {
		return fmt.Errorf("--before is required (e.g. --before 720h deletes what is older than 30 days)")
	}
	now := time.Now()
	f, err := l.filter(now)
	if err != nil {
		return err
	}
	if f.Before, err = parseWhen(*before, now); err != nil {
		return fmt.Errorf("--before: %w", err)
	}
	pool, err := db.Connect(ctx, l.url, 1)
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := deadletter.Purge(ctx, pool, f)
	if err != nil {
		return err
	}
	fmt.Printf("purged %d dead letters stored before %s\n", n, f.Before.UTC().Format(time.RFC3339))
	return nil
}
