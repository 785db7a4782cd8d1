// Package sim simulates managed hubs publishing their status, for local
// runs, demos, benchmarks and end-to-end tests of the bridge, and records
// the state the database must end up holding once the bridge has caught up.
//
// Run drives Config.Hubs hub models for Config.Generations rounds. In each
// round every hub, in turn, steps its model: an agent may restart (its
// incarnation goes up and its generation counter starts again), some of its
// managed clusters change labels, one may be removed or added, and the hub
// sends its bundles of the round, each with the next generation of its
// one version counter:
//
//   - heartbeat and managedclusters (a snapshot of its clusters), always;
//   - clusterspolicies, which policies apply to which clusters, when the
//     placement changed: a policy was added, removed or placed on other
//     clusters, or clusters of the snapshot just sent came or went (the
//     placement never names a cluster the snapshot does not have);
//   - compliance, a complete report built on the last placement, right
//     after every clusterspolicies and every Config.ComplianceEvery
//     rounds; or else compliancedelta, the pairs whose compliance changed
//     since, on the last report as its base;
//   - policyevents, a few events about placed pairs, each named uniquely.
//
// In its first round and after a restart a hub sends its full state
// (managedclusters, clusterspolicies, compliance) before any delta, as a
// real agent does. The messages go to a Publisher; KafkaPublisher sends
// them to Kafka in STB's wire format (EncodeSTB). Everything but the event times follows from
// Config.Seed: the same configuration gives the same messages and the same
// Expected.
//
// Expected is the final state per hub: the last version sent per bundle
// type (for compliancedelta only a bound when a report followed the last
// delta), the managed clusters of the last snapshot, the compliance rows
// (the pairs of the last placement, with the states of the last report and
// the deltas after it), every event sent, whether a heartbeat was sent,
// and message counts. It is written as indented JSON for the verify package
// to compare the database with.
//
// A bundle type is simulated by a source (see source.go); the policy types
// share one model of the hub's policies (policy.go, policysources.go).
//
// Config.Agent AgentGlobalHub simulates instead what the agent of
// stolostron/multicluster-global-hub publishes, rule by rule from its code
// (globalhub.go and the globalhub_*.go files): its event types, versions
// and generic bundles, resync frames, chunks, send modes, and topics keyed
// by event type, with restarts, skewed clocks, lost frames and copies.
// Such a run publishes GHMessages, through a GHPublisher (KafkaPublisher
// is one), and its Expected holds the tables of those types; the versions
// of its types are the bridge's to map and are not in it.
//
// The simulator is a witness independent of the bridge: it writes each
// sender's wire format from that sender's definition (wire.go, and the
// work and cne subpackages), with its own Kafka producer, and imports
// nothing of the bridge's decoding side (pkg/transport, pkg/jsonscan,
// dbsyncers); of this module it uses only pkg/bundle, the bundle types and
// versions that are the data model both sides share. A test of the module
// (test/imports_test.go) holds it to that with go list.
package sim
