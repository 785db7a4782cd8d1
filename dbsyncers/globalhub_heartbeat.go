package dbsyncers

import (
	"errors"
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// GlobalHubHeartbeat returns the syncer of the global-hub agent's
// managedhub.heartbeat events (every 60 s by default): like STB's own
// heartbeat, it keeps status.hub_heartbeats at the time of the hub's latest
// one. Complete: heartbeats a slow database cannot keep up with conflate to
// the newest.
func GlobalHubHeartbeat() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: GHHeartbeat, Kind: bundle.Complete},
		Decode:   decodeGlobalHubHeartbeat,
		Plan:     planHeartbeat,
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
