package deadletter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/pkg/bundle"
)

// MaxDataBytes caps the raw data kept per dead letter; a 5 MiB payload is
// evidence enough in its first 64 KiB.
const MaxDataBytes = 64 << 10

// Letter is one dead letter.
type Letter struct {
	Hub, Type, Version string
	Origin             bundle.Origin
	Reason             string
	Err                error
	Headers            map[string]string
	Data               []byte
}

// DB is what the writer needs; *pgxpool.Pool has it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Writer inserts dead letters.
type Writer struct {
	db DB
}

// NewWriter returns a writer on db.
func NewWriter(db DB) *Writer { return &Writer{db: db} }

// Write inserts one letter.
func (w *Writer) Write(ctx context.Context, l Letter) error {
	// Everything that came from the message is cleaned and capped: a
	// hostile message must not make its own dead letter fail (jsonb and
	// text refuse NUL, an index entry must fit in a page).
	headers := make(map[string]string, len(l.Headers))
	for k, v := range l.Headers {
		headers[capText(clean(k), maxHeaderBytes)] = capText(clean(v), maxHeaderBytes)
	}
	hj, err := json.Marshal(headers)
	if err != nil {
		return fmt.Errorf("encode dead letter headers: %w", err)
	}
	data := l.Data
	if len(data) > MaxDataBytes {
		data = data[:MaxDataBytes]
	}
	msg := ""
	if l.Err != nil {
		msg = l.Err.Error()
	}
	_, err = w.db.Exec(ctx, `
INSERT INTO status.dead_letters (hub, bundle_type, version, topic, "partition", "offset", reason, error, headers, data)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10)`,
		capText(clean(l.Hub), maxKeyBytes), capText(clean(l.Type), maxKeyBytes), capText(clean(l.Version), maxKeyBytes),
		l.Origin.Topic, l.Origin.Partition, l.Origin.Offset, l.Reason, capText(clean(msg), maxHeaderBytes), string(hj), data)
	if err != nil {
		return fmt.Errorf("insert dead letter: %w", err)
	}
	return nil
}

// Job dead-letters every bundle of a job whose write failed permanently.
// The raw event is gone by then; the decoded payload, re-encoded as JSON,
// stands in for its data.
func (w *Writer) Job(ctx context.Context, job *conflation.Job, reason string, cause error) error {
	for _, b := range job.Bundles {
		data, _ := json.Marshal(b.Payload)
		err := w.Write(ctx, Letter{
			Hub: b.Hub, Type: b.Type, Version: b.Version.String(), Origin: b.Origin,
			Reason: reason, Err: cause, Data: data,
			Headers: map[string]string{"ce_source": b.Hub, "ce_extversion": b.Version.String()},
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Caps on what a dead letter keeps of text from the message: indexed
// columns must fit in a B-tree entry; headers and error text are evidence,
// not payload.
const (
	maxKeyBytes    = 512
	maxHeaderBytes = 4 << 10
)

// capText cuts s to at most n bytes on a UTF-8 boundary, marking the cut.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// clean drops NUL bytes and invalid UTF-8, which text columns refuse: a
// hostile hub name must not make its own dead letter fail.
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, ""), "\x00", "")
}
