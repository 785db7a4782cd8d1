// Package bundle defines what flows through the bridge: a Bundle is one
// status report of one hub (its type, version, dependency, raw data and,
// once decoded, payload, and where it was read from), and a Version orders
// a hub's reports.
//
// It sits between the transport reader, which builds bundles, and the
// conflation units, dispatcher and database syncers, which consume them. It
// knows nothing of Kafka or SQL.
package bundle
