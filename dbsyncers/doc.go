// Package dbsyncers holds the database side of every bundle type: a Syncer
// per type carries its conflation rules, its payload decoder, its
// set-based handler and, for delta types, how to merge deltas; the
// Registry lists them in priority order.
//
// Registry.Apply runs inside the worker's transaction: it first moves the
// hub's stb.bundle_versions row forward (the version fence) and runs the
// handler only when that succeeded, so a replayed or reordered older bundle
// writes nothing. Registry.Write, what the workers use, does the same for
// several jobs in one round trip: a syncer's Plan gives its statements
// without running them, and the fences and statements of the jobs go out as
// one pipelined batch, which PostgreSQL runs as one implicit transaction (no
// BEGIN, no COMMIT); in the rare case where a fence refuses its bundle, it
// fails and the batch rolls back (ErrStale). A bundle comes to them raw:
// its payload is decoded here, when it is about to be written
// (Registry.DecodeBundle), so the many bundles replaced before they are
// written are never decoded. The package knows nothing of Kafka.
//
// The types and what they write:
//
//   - heartbeat: stb.hub_heartbeats, the time of the hub's latest one.
//   - managedclusters: stb.managed_clusters, made exactly the snapshot.
//   - clusterspolicies: which (policy, cluster) rows stb.compliance
//     holds; new pairs start as unknown, pairs that stay keep their state.
//   - compliance: the state of the listed policies' rows (the listed
//     clusters non_compliant or unknown, the others compliant).
//   - compliancedelta: changes on top of exactly one compliance bundle,
//     applied as one ordered group after checking that base.
//   - policyevents: stb.policy_events, each event stored once.
//
// Placement owns the rows of stb.compliance: compliance bundles and
// deltas only update rows that exist, never insert them (see
// compliance.go). Decoders leave payloads sorted and free of duplicate
// keys, so handlers send each bundle's rows once, as arrays to unnest or,
// when many, copied into a temporary table (statements.go).
package dbsyncers
