// Package cne is the Cloud Native Events status family (profile "cne"):
// the O-RAN / PTP notifications that redhat-cne's cloud-event-proxy
// publishes for each node of a cluster (synchronization, PTP lock state,
// OS clock, GNSS, clock class, and any other type under the same model),
// read from Kafka as CloudEvents 1.0 or 0.3, binary or structured mode,
// and kept in PostgreSQL as the latest value per key.
//
// An event's data is {"version", "values":[…]}; each value is one row of
// stb.cne_state, keyed by (CloudEvents type, resource address, data
// type). Both field-name sets of a value are read: O-RAN v3's
// ResourceAddress, data_type, value_type (sdk-go v2) and the v1 names
// resource, dataType, valueType. The node named by the address's
// /cluster/node/<node>/ segment is the conflation unit (the "hub").
//
// Order is per key: the event's CloudEvents time in nanoseconds, ties
// broken by the Kafka position within one partition (and, across
// partitions, by topic and partition: Value.After); a value never
// overwrites one that is newer by that order, in a unit (Merge) or in the
// database (the upsert's WHERE). The bundle-level fence
// (stb.bundle_versions) is constant and takes equal versions, so it
// never drops anything (but a deleted node's, see TestNodeLifecycle): the
// real fence is the one per key.
//
// An event is checked when it is read (Family.Bundle), so a bad one is one
// dead letter with its reason, and its node is known; its values are
// decoded, as STB's own bundles are, only when it is about to be written
// or merged. Its event's type, id, source, time and Kafka position, which
// the data alone does not hold, travel beside the data, in the bundle's
// Attrs (a *Context), which the decoder is handed with the bundle.
package cne
