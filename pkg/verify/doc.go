// Package verify compares the database the bridge writes with the state a
// simulation says it must hold (sim.Expected), for `stb verify`, `stb demo`
// and the end-to-end tests.
//
// Verify reads each table once, for all hubs (a handful of set-based
// queries, streamed, whatever the number of hubs; a table whose rows are
// compared one by one is read in hub order, so only one hub's keys are held
// at once), and reports every difference: versions in
// stb.bundle_versions older or newer than the last bundle sent (or, for
// a compliancedelta a report followed, newer than the bound); missing or
// unexpected managed clusters and wrong cluster ids or labels; missing or
// unexpected compliance rows and rows in the wrong state; missing or
// unexpected policy events; missing heartbeats and hub rows; and rows of
// hubs that were never simulated. For the global-hub agent's hubs
// (sim.Expected.GlobalHubAgent) it reads the global hub's own tables, the
// ones upstream's operator creates (README "The global hub's database"),
// where a soft-deleted row (deleted_at set) is absent: managed clusters in
// status.managed_clusters, compliance in local_status.compliance,
// heartbeats in status.leaf_hub_heartbeats; and it compares the tables
// its types fill instead of their versions (the bridge maps them onto
// runs of its own): hub info (status.leaf_hubs), local policies
// (local_spec.policies), alert counts (security.alert_counts), cluster
// migrations (stb.cluster_migrations), managed-cluster and local policy
// events (event.managed_clusters, event.local_policies,
// event.local_root_policies), each event stored once. The tables of the
// other agent kind must hold no rows of the hubs. The Report counts the
// hubs affected per category and keeps the differences themselves,
// sorted, for its Summary.
//
// A database simulated into before holds what earlier runs left. When the
// expected state says which incarnation its run started at
// (sim.Expected.FirstIncarnation), the versions of types the run did not
// send at lower incarnations and the policy events an earlier run named
// (sim.EventRun) are counted in Report.Earlier, and tombstones of types a
// hub did not send (stb hub delete) in Report.Tombstones, not as
// differences.
//
// It only reads, and knows nothing of Kafka or of how the bridge writes.
package verify
