// Package console is the operator's console of a bridge, served on the
// admin listener only: an overview of what needs attention (counts, the
// worst hubs, partitions, readiness), search, a page per hub, the dead
// letters by reason, /debug/units and pprof, and the actions (replay dead
// letters, purge them, delete or reset a hub) behind a per-process form
// token. Every page is bounded whatever the number of hubs, and every name
// from the network is escaped.
//
// It sees the bridge only through small interfaces declared here, each
// with the one or few methods it calls (Units, Partitions, Readiness,
// HubStates), as pgx's BeginFunc takes an inline one-method interface;
// what it reads from the database is functions of pkg/db and
// pkg/deadletter, and a replay is internal/replay's Run.
package console
