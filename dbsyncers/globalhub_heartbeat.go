package dbsyncers

import (
	"errors"
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// GlobalHubHeartbeat returns the syncer of the global-hub agent's
// managedhub.heartbeat events (every 60 s by default), which keep the
// hub's row of status.leaf_hub_heartbeats, as upstream's manager does
// (manager/pkg/status/handlers/managedhub/hub_cluster_heartbeat_handler.go).
// Complete: heartbeats a slow database cannot keep up with conflate to the
// newest.
//
// It does not write STB's own stb.hub_heartbeats (that is the heartbeat of
// STB's wire format, heartbeat.go). STB's hub lifecycle (stb.hubs) is
// not the handler's: the version fence keeps it for every type
// (versions.go), heartbeats included.
func GlobalHubHeartbeat() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: GHHeartbeat, Kind: bundle.Complete},
		Decode:   decodeGlobalHubHeartbeat,
		Plan:     planGHHeartbeat,
	}
}

// decodeGlobalHubHeartbeat accepts what the agent sends: an empty JSON
// array (its items, should one ever come, are ignored), or no data at all
// (null, or an empty body: its emitter sets nil data). Anything else is not
// a heartbeat.
func decodeGlobalHubHeartbeat(data []byte) (any, error) {
	if len(data) == 0 || jsonscan.IsNull(data) {
		return &HeartbeatPayload{}, nil
	}
	d := jsonscan.NewDecoder(data)
	err := d.Array(func() error { return d.Skip() })
	if err == nil {
		err = d.Done()
	}
	if err != nil {
		return nil, badPayload(fmt.Errorf("%s: want a JSON array: %w", GHHeartbeat, err))
	}
	return &HeartbeatPayload{}, nil
}

// errNotObject is returned by decoders that want a JSON object.
var errNotObject = errors.New("want a JSON object")

// ghHeartbeatSQL is upstream's UpInsertHeartBeat
// (pkg/database/models/status.go, LeafHubHeartbeat): a new hub's row is
// 'active'; an existing row only gets the new last_timestamp, so that a
// hub upstream's hub management marked inactive stays inactive until it
// changes it back. The time is when the heartbeat is written (upstream:
// time.Now() in the handler), in UTC.
const ghHeartbeatSQL = `
INSERT INTO status.leaf_hub_heartbeats AS t (leaf_hub_name, status, last_timestamp)
VALUES ($1, 'active', ` + nowUTC + `)
ON CONFLICT (leaf_hub_name) DO UPDATE SET last_timestamp = excluded.last_timestamp`

func planGHHeartbeat(bundles []*bundle.Bundle) (Write, error) {
	b := bundles[len(bundles)-1]
	if _, err := payloadOf[HeartbeatPayload](b); err != nil {
		return Write{}, err
	}
	return Write{Statements: []Statement{{What: "upsert leaf hub heartbeat", SQL: ghHeartbeatSQL, Args: []any{b.Hub}}}}, nil
}
