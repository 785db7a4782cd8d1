// Package console is the operator's console of a bridge, served on the
// admin listener only: an overview of what is wrong (readiness and its
// causes, figures graded ok, warn or bad by Thresholds, the hubs with most
// dead letters, the lag per topic, the worst hubs and what they wait
// for), the partitions and the inactive hubs a link away, search, a page
// per hub, the dead letters by reason, /debug/units and pprof, and the
// actions (replay dead
// letters, purge them, delete or reset a hub) behind a per-process form
// token. Every page is bounded whatever the number of hubs, and every name
// from the network is escaped.
//
// It sees the bridge only through small interfaces declared here, each
// with the one or few methods it calls (Units, Partitions, Readiness,
// HubStates), as pgx's BeginFunc takes an inline one-method interface;
// what it reads from the database is functions of pkg/db and
// pkg/deadletter, and the two bounded queries only the overview asks
// (queries.go); a replay is internal/replay's Run.
package console
