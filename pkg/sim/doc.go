// Package sim simulates managed hubs publishing their status, for local
// runs, demos, benchmarks and end-to-end tests of the bridge, and records
// the state the database must end up holding once the bridge has caught up.
//
// Run drives Config.Hubs hub models for Config.Generations rounds. In each
// round every hub, in turn, steps its model: an agent may restart (its
// incarnation goes up and its generation counter starts again), some of its
// managed clusters change labels, one may be removed or added, and the hub
// sends one bundle of each type it simulates (a heartbeat and a
// managedclusters snapshot), each with the next generation of its version.
// The messages go to a Publisher; the command line adapts it to the Kafka
// transport. Everything but the event times follows from Config.Seed: the
// same configuration gives the same messages and the same Expected.
//
// Expected is the final state per hub (the last version sent per bundle
// type, the managed clusters of the last snapshot, whether a heartbeat was
// sent) with message counts. It is written as indented JSON for the verify
// package to compare the database with.
//
// A bundle type is simulated by a source (see source.go): adding policies,
// compliance, deltas or events is one more source in newHub's list, with
// its share of the final state in Expected.
package sim
