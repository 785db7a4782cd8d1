package deadletter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/redact"
)

// MaxDataBytes caps the raw data kept per dead letter; a 5 MiB payload is
// evidence enough in its first 64 KiB.
const MaxDataBytes = 64 << 10

// Letter is one dead letter, the one type from where it is made to where
// it is stored: the transport reader rejects a message with one
// (transport.Reject carries it) and hands it to a Queue, a failed write
// makes them with Bundles, and the Writer stores them.
type Letter struct {
	Hub, Type, Version string
	Origin             bundle.Origin
	Reason             Reason
	Err                error
	Headers            map[string]string
	Data               []byte
	// Key is the Kafka message key of a read-side letter, stored among
	// the headers as KeyHeader so that a replay can rebuild the message.
	Key []byte
}

// KeyHeader holds a read-side letter's Kafka key in its stored headers.
const KeyHeader = "x-stb-kafka-key"

// size is what a letter holds in memory, for backpressure.
func (l *Letter) size() int64 {
	n := len(l.Hub) + len(l.Type) + len(l.Version) + len(l.Data) + len(l.Key) + 128
	for k, v := range l.Headers {
		n += len(k) + len(v)
	}
	return int64(n)
}

// Bundles returns the dead letters of bundles whose write failed
// permanently, with the event they were read from: its data
// (bundle.Bundle.Raw), key and headers (bundle.Bundle.Message), as a
// reader's reject keeps them, so that a letter can be replayed from its
// stored copy once the bridge or the sender is fixed. A bundle built from
// others (merged deltas) has no message of its own: its payload, encoded
// as JSON, stands in for the data.
func Bundles(bs []*bundle.Bundle, reason Reason, cause error) []Letter {
	out := make([]Letter, len(bs))
	for i, b := range bs {
		l := Letter{Hub: b.Hub, Type: b.Type, Version: b.Version.String(), Origin: b.Origin,
			Reason: reason, Err: cause, Data: b.Raw}
		if b.Message != nil {
			l.Key, l.Headers = b.Message.Letter()
		} else {
			l.Headers = map[string]string{"ce_source": b.Hub, "ce_extversion": b.Version.String()}
			if l.Data == nil {
				l.Data, _ = json.Marshal(b.Payload)
			}
		}
		out[i] = l
	}
	return out
}

// DB is what the writer needs; *pgxpool.Pool and pgx.Tx have it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Writer inserts dead letters.
type Writer struct {
	db DB
}

// NewWriter returns a writer on db.
func NewWriter(db DB) *Writer { return &Writer{db: db} }

// insertLetters writes a set of letters in one statement. A letter whose
// origin (and hub and type) is stored already is skipped: a message read
// twice, or a batch retried after a part of it was stored, is
// dead-lettered once.
const insertLetters = `
INSERT INTO stb.dead_letters (hub, bundle_type, version, topic, "partition", "offset", reason, error, headers, data)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::text[], $8::text[], $9::jsonb[], $10::bytea[])
ON CONFLICT (topic, "partition", "offset", hub, bundle_type) DO NOTHING`

// Write stores letters in one statement and returns how many were new.
func (w *Writer) Write(ctx context.Context, letters ...Letter) (int64, error) {
	if len(letters) == 0 {
		return 0, nil
	}
	n := len(letters)
	hubs, types, versions, topics := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	parts, offsets := make([]int32, n), make([]int64, n)
	reasons, errs, headers := make([]string, n), make([]string, n), make([]string, n)
	data := make([][]byte, n)
	for i := range letters {
		l := &letters[i]
		// Everything that came from the message is cleaned and capped: a
		// hostile message must not make its own dead letter fail (jsonb
		// and text refuse NUL, an index entry must fit in a page).
		h := make(map[string]string, len(l.Headers))
		for k, v := range l.Headers {
			h[redact.Cap(clean(k), maxHeaderBytes)] = redact.Cap(clean(v), maxHeaderBytes)
		}
		if len(l.Key) > 0 {
			h[KeyHeader] = redact.Cap(clean(string(l.Key)), maxHeaderBytes)
		}
		hj, err := json.Marshal(h)
		if err != nil {
			return 0, fmt.Errorf("encode dead letter headers: %w", err)
		}
		msg := ""
		if l.Err != nil {
			msg = l.Err.Error()
		}
		d := l.Data
		if len(d) > MaxDataBytes {
			d = d[:MaxDataBytes]
		}
		hubs[i], types[i] = redact.Cap(clean(l.Hub), maxKeyBytes), redact.Cap(clean(l.Type), maxKeyBytes)
		versions[i], topics[i] = redact.Cap(clean(l.Version), maxKeyBytes), redact.Cap(clean(l.Origin.Topic), maxKeyBytes)
		parts[i], offsets[i] = l.Origin.Partition, l.Origin.Offset
		reasons[i], errs[i], headers[i], data[i] = string(l.Reason), redact.Cap(clean(msg), maxHeaderBytes), string(hj), d
	}
	tag, err := w.db.Exec(ctx, insertLetters, hubs, types, versions, topics, parts, offsets, reasons, errs, headers, data)
	if err != nil {
		return 0, fmt.Errorf("insert %d dead letters: %w", n, err)
	}
	return tag.RowsAffected(), nil
}

// Caps on what a dead letter keeps of text from the message: indexed
// columns must fit in a B-tree entry; headers and error text are evidence,
// not payload.
const (
	maxKeyBytes    = 512
	maxHeaderBytes = 4 << 10
)

// clean drops NUL bytes and invalid UTF-8, which text columns refuse: a
// hostile hub name must not make its own dead letter fail.
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, ""), "\x00", "")
}
