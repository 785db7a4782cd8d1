package dbsyncers

import (
	"encoding/json"
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// HubInfoPayload is the decoded data of a managedhub.info event: the
// object the hub sends about itself ({"consoleURL","grafanaURL",
// "clusterId", …}), kept whole, and its clusterId.
type HubInfoPayload struct {
	ClusterID string
	Object    json.RawMessage
}

// GlobalHubInfo returns the syncer of managedhub.info events, which keep
// status.hub_info at the hub's latest description of itself. Complete: only
// the newest matters.
func GlobalHubInfo() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: GHHubInfo, Kind: bundle.Complete},
		Decode:   decodeGlobalHubInfo,
		Plan:     planGlobalHubInfo,
	}
}

// decodeGlobalHubInfo reads one JSON object. Members it does not know are
// kept; a missing or empty clusterId (the agent sends the object before
// the hub's ClusterVersion is seen) is taken, and planGlobalHubInfo
// writes nothing for it; one that is not a string is a bad payload.
func decodeGlobalHubInfo(data []byte) (any, error) {
	if jsonscan.IsNull(data) {
		return nil, badPayload(fmt.Errorf("%s: %w, got null", GHHubInfo, errNotObject))
	}
	var p HubInfoPayload
	d := jsonscan.NewDecoder(data)
	obj, err := d.Span(func() error {
		return d.Object(func(name []byte) error {
			if string(name) == "clusterId" {
				return setString(d, &p.ClusterID, "clusterId")
			}
			return nil
		})
	})
	if err == nil {
		err = d.Done()
	}
	if err == nil {
		err = checkText("clusterId", p.ClusterID)
	}
	if err != nil {
		return nil, badPayload(fmt.Errorf("%s: %w", GHHubInfo, err))
	}
	p.Object = obj
	return &p, nil
}

// hubInfoSQL stores the hub's description; an unchanged one is not
// rewritten.
const hubInfoSQL = `
INSERT INTO status.hub_info AS t (hub, cluster_id, payload)
VALUES ($1, $2, $3::text::jsonb)
ON CONFLICT (hub) DO UPDATE SET
	cluster_id = excluded.cluster_id,
	payload    = excluded.payload,
	updated_at = now()
WHERE (t.cluster_id, t.payload) IS DISTINCT FROM (excluded.cluster_id, excluded.payload)`

// Ignored reports whether the info is one upstream's manager ignores: one
// without clusterId. The global-hub profile skips it when read, so that it
// never replaces an unwritten info that has one.
func (p *HubInfoPayload) Ignored() bool { return p.ClusterID == "" }

func planGlobalHubInfo(bundles []*bundle.Bundle) (Write, error) {
	b := bundles[len(bundles)-1]
	p, err := payloadOf[HubInfoPayload](b)
	if err != nil {
		return Write{}, err
	}
	if p.ClusterID == "" {
		// Upstream's manager ignores it ("Ignore data which do not have
		// clusterid": manager/pkg/status/handlers/managedhub/
		// hub_cluster_info_handler.go): the hub's stored description stays
		// the last one with its cluster's id.
		return Write{}, nil
	}
	return Write{Statements: []Statement{{What: "upsert hub info", SQL: hubInfoSQL, Args: []any{b.Hub, p.ClusterID, string(p.Object)}}}}, nil
}
