// Package dbsyncers holds the database side of every bundle type: a Syncer
// per type carries its conflation rules, its payload decoder and its
// set-based handler, and the Registry lists them in priority order.
//
// Registry.Apply runs inside the worker's transaction: it first moves the
// hub's status.bundle_versions row forward (the version fence) and runs the
// handler only when that succeeded, so a replayed or reordered older bundle
// writes nothing. The package knows nothing of Kafka.
package dbsyncers
