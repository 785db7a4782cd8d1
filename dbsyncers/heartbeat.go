package dbsyncers

import (
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
)

// HeartbeatPayload is the decoded data of a heartbeat bundle. A heartbeat
// says only that the hub is alive and when; its data carries nothing.
type HeartbeatPayload struct{}

// Heartbeat returns the syncer of "heartbeat" bundles, which keep
// stb.hub_heartbeats at the time of each hub's latest heartbeat, so that
// silent hubs can be found. Being complete, heartbeats of a hub the
// database cannot keep up with conflate to the newest one.
func Heartbeat() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: "heartbeat", Kind: bundle.Complete},
		Decode:   decodeHeartbeat,
		Plan:     planHeartbeat,
	}
}

// decodeHeartbeat accepts {} and {"objects":[...]}, the two forms agents
// send; the objects, if any, are ignored.
func decodeHeartbeat(data []byte) (any, error) {
	if err := eachObject(data, false, func() {}, nil); err != nil {
		return nil, badPayload(fmt.Errorf("heartbeat %w", err))
	}
	return &HeartbeatPayload{}, nil
}

// heartbeatSQL records the time of a hub's latest heartbeat. The version
// fence has already made sure it is newer than the stored one.
const heartbeatSQL = `
INSERT INTO stb.hub_heartbeats (hub, last_timestamp, received_at)
VALUES ($1, coalesce($2::timestamptz, now()), now())
ON CONFLICT (hub) DO UPDATE SET
	last_timestamp = excluded.last_timestamp,
	received_at    = excluded.received_at`

// planHeartbeat stores the hub's time of the last heartbeat: the time the
// hub stamped on it, or, for an event without one, when the bridge read it
// (and, should that be missing too, the database's clock: a heartbeat is
// never worth a dead letter).
func planHeartbeat(bundles []*bundle.Bundle) (Write, error) {
	b := bundles[len(bundles)-1]
	if _, err := payloadOf[HeartbeatPayload](b); err != nil {
		return Write{}, err
	}
	var ts any // nil: now()
	switch {
	case !b.EventTime.IsZero():
		ts = b.EventTime
	case !b.ReceivedAt.IsZero():
		ts = b.ReceivedAt
	}
	return Write{Statements: []Statement{{What: "upsert heartbeat", SQL: heartbeatSQL, Args: []any{b.Hub, ts}}}}, nil
}
