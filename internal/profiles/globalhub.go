package profiles

import (
	"github.com/stbridge/stb/pkg/db"
)

// globalHubTables declares what `stb hub delete|reset` (and
// --hub-delete-after) does to the global hub's own tables, which the
// global-hub profile writes (README "The global hub's database"). They are
// upstream's: their hub column is leaf_hub_name or hub_name, and no request
// finds them by a column's name (db.HubTable), so each is named here.
//
// A delete does what upstream's hub management does to a hub it cleans up
// (stolostron/multicluster-global-hub
// manager/pkg/processes/hubmanagement/hub_management.go, cleanup, one
// transaction), in its order:
//
//   - status.managed_clusters, status.leaf_hubs and local_spec.policies:
//     the hub's live rows soft-deleted (deleted_at = now() AT TIME ZONE
//     'UTC' where deleted_at IS NULL; gorm's Delete of a model with a
//     DeletedAt does the same). Readers take them for absent, and the
//     hub's next upsert of a row revives it.
//   - local_status.compliance: the hub's rows deleted (no soft delete).
//   - status.leaf_hub_heartbeats: the hub's row kept, its status set to
//     inactive. Upstream's manager sets it active again, with a resync
//     request, once the hub's heartbeats come back (its update); STB's
//     heartbeat moves only last_timestamp.
//
// Upstream's cleanup leaves the event tables (event.managed_clusters,
// event.local_policies, event.local_root_policies) and
// history.local_compliance alone: they are the record of what happened,
// which upstream's retention job prunes by age. So does STB.
//
// security.alert_counts upstream's cleanup does not name. Its rows are a
// hub's current counts, not a record, and nothing but the hub's own
// security.alertcounts ever replaces them, so a deleted hub's would stand
// on the dashboards for good: STB deletes them, as it deleted the hub's
// counts before it wrote upstream's tables. (stb.cluster_migrations, in
// schema stb, is found by its hub column and emptied of the hub's rows.)
//
// A reset (a hub rebuilt from scratch whose versions went backwards; upstream
// has none) does what a delete does to these tables but for the heartbeat:
// what the old build reported is no longer the hub's, and the rebuilt agent
// sends all of it again when it starts (a resync of every object type),
// which revives the rows it still has. The hub's heartbeat row is left as
// it is: the hub is expected back at once, and a row marked inactive would
// stay so where no upstream manager runs to mark it active again.
func globalHubTables() []db.HubTable {
	return []db.HubTable{
		{Table: "status.managed_clusters", Column: "leaf_hub_name", DeletedAt: "deleted_at"},
		{Table: "status.leaf_hubs", Column: "leaf_hub_name", DeletedAt: "deleted_at"},
		{Table: "local_spec.policies", Column: "leaf_hub_name", DeletedAt: "deleted_at"},
		{Table: "local_status.compliance", Column: "leaf_hub_name"},
		{Table: "status.leaf_hub_heartbeats", Column: "leaf_hub_name",
			Set: map[string]string{"status": "inactive"}, Actions: []db.HubAction{db.DeleteHub}},
		{Table: "security.alert_counts", Column: "hub_name"},
	}
}
