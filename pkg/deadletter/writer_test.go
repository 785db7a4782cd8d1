package deadletter

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// Regression: a NUL byte in a header made the jsonb insert fail (22P05),
// and a 1 MiB source overflowed the hub index (54000), so those dead
// letters were lost. Hostile input must still make a dead letter.
func TestWriteHostileMessage(t *testing.T) {
	pool, _ := dbtest.New(t)
	w := NewWriter(pool)
	ctx := context.Background()
	huge := strings.Repeat("h", 1<<20)
	_, err := w.Write(ctx, Letter{
		Hub: huge, Type: "heart\x00beat", Version: "1.\xff2",
		Origin:  bundle.Origin{Topic: "status", Partition: 3, Offset: 42},
		Reason:  "source_mismatch",
		Err:     errors.New("bad \x00 thing"),
		Headers: map[string]string{"ce_type": "io.stb.status.v1.heart\x00beat", "ce_\x00key": strings.Repeat("v", 1<<20)},
		Data:    make([]byte, 5<<20),
	})
	if err != nil {
		t.Fatalf("dead letter of a hostile message not written: %v", err)
	}
	var hub, typ, reason string
	var off int64
	var dataLen int
	if err := pool.QueryRow(ctx, `SELECT hub, bundle_type, reason, "offset", length(data) FROM stb.dead_letters`).Scan(&hub, &typ, &reason, &off, &dataLen); err != nil {
		t.Fatal(err)
	}
	if len(hub) > maxKeyBytes+len("…") || !strings.HasPrefix(hub, "hhhh") {
		t.Errorf("hub kept %d bytes, want it capped at %d", len(hub), maxKeyBytes)
	}
	if typ != "heartbeat" || reason != "source_mismatch" || off != 42 || dataLen != MaxDataBytes {
		t.Errorf("got type %q reason %q offset %d data %d bytes", typ, reason, off, dataLen)
	}
}

func letterAt(offset int64) Letter {
	return Letter{
		Hub: "hub-1", Type: "compliance", Version: "1.2",
		Origin: bundle.Origin{Topic: "status", Partition: 1, Offset: offset},
		Reason: BadPayload, Err: errors.New("not JSON"), Data: []byte("{"),
	}
}

func countLetters(t *testing.T, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (rows, distinct int) {
	t.Helper()
	if err := db.QueryRow(context.Background(),
		`SELECT count(*), count(DISTINCT (topic, "partition", "offset")) FROM stb.dead_letters`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	return rows, distinct
}

// TestWriteIsIdempotent: a batch that failed after part of its letters
// were stored (here: stored by an earlier attempt), then retried whole,
// leaves exactly one row per message. Before the table had a key, the
// retry (and any message read twice after a rebalance) stored a second
// row: 6 dead letters for 3 malformed messages.
func TestWriteIsIdempotent(t *testing.T) {
	pool, _ := dbtest.New(t)
	w := NewWriter(pool)
	ctx := context.Background()
	if n, err := w.Write(ctx, letterAt(1), letterAt(2)); err != nil || n != 2 {
		t.Fatalf("first write: %d new, %v; want 2", n, err)
	}
	batch := []Letter{letterAt(1), letterAt(2), letterAt(3), letterAt(4)}
	n, err := w.Write(ctx, batch...)
	if err != nil || n != 2 {
		t.Fatalf("retried batch: %d new, %v; want the 2 not stored before", n, err)
	}
	// A write-side letter of the same origin but another type is a
	// different letter.
	other := letterAt(1)
	other.Type = "clusterspolicies"
	if n, err := w.Write(ctx, other); err != nil || n != 1 {
		t.Fatalf("same origin, other type: %d new, %v; want 1", n, err)
	}
	if rows, distinct := countLetters(t, pool); rows != 5 || distinct != 4 {
		t.Fatalf("%d rows for %d origins, want 5 rows (4 origins, one with two types)", rows, distinct)
	}
}

// TestWriteFailsAsAWhole: a batch with a letter the database refuses
// stores none of it (one statement), so its retry stores each once.
func TestWriteFailsAsAWhole(t *testing.T) {
	pool, _ := dbtest.New(t)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	w := NewWriter(tx)
	if _, err := w.Write(ctx, letterAt(1), letterAt(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SAVEPOINT before`); err != nil {
		t.Fatal(err)
	}
	// Make the next insert fail part-way: a check that refuses offset 4.
	if _, err := tx.Exec(ctx, `ALTER TABLE stb.dead_letters ADD CONSTRAINT no4 CHECK ("offset" <> 4)`); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(ctx, letterAt(3), letterAt(4), letterAt(5)); err == nil {
		t.Fatal("a batch with a refused letter was stored")
	}
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT before`); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Write(ctx, letterAt(1), letterAt(2), letterAt(3), letterAt(4), letterAt(5)); err != nil || n != 3 {
		t.Fatalf("retry: %d new, %v; want 3", n, err)
	}
	if rows, distinct := countLetters(t, tx); rows != 5 || distinct != 5 {
		t.Fatalf("%d rows for %d origins, want one row per message (5)", rows, distinct)
	}
}
