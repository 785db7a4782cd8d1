package deadletter

import (
	"context"
	"errors"
	"strings"
	"testing"

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
	err := w.Write(ctx, Letter{
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
	if err := pool.QueryRow(ctx, `SELECT hub, bundle_type, reason, "offset", length(data) FROM status.dead_letters`).Scan(&hub, &typ, &reason, &off, &dataLen); err != nil {
		t.Fatal(err)
	}
	if len(hub) > maxKeyBytes+len("…") || !strings.HasPrefix(hub, "hhhh") {
		t.Errorf("hub kept %d bytes, want it capped at %d", len(hub), maxKeyBytes)
	}
	if typ != "heartbeat" || reason != "source_mismatch" || off != 42 || dataLen != MaxDataBytes {
		t.Errorf("got type %q reason %q offset %d data %d bytes", typ, reason, off, dataLen)
	}
}
