package deadletter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

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
	headers := l.Headers
	if headers == nil {
		headers = map[string]string{}
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
		clean(l.Hub), clean(l.Type), clean(l.Version), l.Origin.Topic, l.Origin.Partition, l.Origin.Offset,
		l.Reason, clean(msg), string(hj), data)
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

// clean drops NUL bytes and invalid UTF-8, which text columns refuse: a
// hostile hub name must not make its own dead letter fail.
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, ""), "\x00", "")
}
