package dbsyncers

import (
	"encoding/json"
	"fmt"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// HubInfoPayload is the decoded data of a managedhub.info event: the
// object the hub sends about itself ({"consoleURL","grafanaURL",
// "clusterId","mchVersion", …}), kept whole, and its clusterId, in the
// form PostgreSQL prints a uuid.
type HubInfoPayload struct {
	ClusterID string
	Object    json.RawMessage
}

// GlobalHubInfo returns the syncer of managedhub.info events, which keep
// the hub's row of status.leaf_hubs for its cluster id at the hub's latest
// description of itself (manager/pkg/status/handlers/managedhub/
// hub_cluster_info_handler.go). Complete: only the newest matters.
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
//
// A clusterId that is not a UUID is a bad payload too: it is half of
// status.leaf_hubs' primary key, a uuid, and upstream's insert of it would
// fail (hub_cluster_info_handler.go returns the error, and the manager
// retries it for ever). The hub's ClusterVersion spec.clusterID is always
// one. The transport decodes infos when it reads them (they are screened),
// so such an info is a bad_payload dead letter there, saying why.
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
		err = checkJSONText("the info", obj)
	}
	if err == nil && p.ClusterID != "" {
		p.ClusterID, err = checkUUID("clusterId", p.ClusterID)
	}
	if err != nil {
		return nil, badPayload(fmt.Errorf("%s: %w", GHHubInfo, err))
	}
	p.Object = obj
	return &p, nil
}

// hubInfoSQL is upstream's upsert of the hub's models.LeafHub
// (hub_cluster_info_handler.go: OnConflict on (cluster_id, leaf_hub_name),
// DoUpdates payload and updated_at). A row soft-deleted meanwhile
// (deleted_at, by upstream's hub management) is brought back: the hub
// reports itself again. A hub whose clusterId changes gets a second row;
// the old one stays, as upstream leaves it.
const hubInfoSQL = `
INSERT INTO status.leaf_hubs AS t (leaf_hub_name, cluster_id, payload, created_at, updated_at)
VALUES ($1, $2::text::uuid, $3::text::jsonb, ` + nowUTC + `, ` + nowUTC + `)
ON CONFLICT (cluster_id, leaf_hub_name) DO UPDATE SET
	payload    = excluded.payload,
	updated_at = excluded.updated_at,
	deleted_at = NULL`

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
	return Write{Statements: []Statement{{What: "upsert leaf hub", SQL: hubInfoSQL, Args: []any{b.Hub, p.ClusterID, string(p.Object)}}}}, nil
}
