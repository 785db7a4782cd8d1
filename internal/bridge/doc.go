// Package bridge wires the pipeline of `stb run`: the transport reader,
// the conflation manager, the dispatcher and its workers, the committer and
// the HTTP server (metrics, health, status page).
//
// New builds it from a Config (start from DefaultConfig), Run runs it until
// its context ends and shuts it down in a fixed, bounded order, and Stats
// reports on it for the demo, the bench and the status page. cmd/stb, the
// demo and the bench build bridges only through this API.
package bridge
