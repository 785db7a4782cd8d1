// Package bench is `stb bench`: it measures the bridge against its
// baseline (the same bridge with --conflation=false, writing every bundle)
// and against this machine's ceilings (reading the backlog without
// decoding, reading and decoding it without writing, writing its final
// state straight through the handlers), side by side, in named scenarios:
// catch-up, catch-up-hubs, large-hub, overload, steady and poison-flood.
// Operators run it to size their database; BENCHMARKS.md holds the figures
// and how each scenario is built.
//
// # How a run is built
//
// Run validates the Config (flags are bound in cmd/stb; DefaultConfig,
// Validate), starts one embedded broker with every topic of the selected
// scenarios, and runs each scenario of the one list in benchScenarios
// (--repeat times, each repetition on topics and databases of its own). A
// scenario:
//
//   - publishes its load from producer processes (producer.go, produce.go):
//     a backlog before anything reads it, or a live load at a rate while a
//     variant reads;
//   - runs each bridge variant in this process (bridge.go) on a fresh
//     database and consumer group, built only through the bridge's public
//     API (bridge.New, Run, Close, Stats, Gatherer, Units), and waits until it is
//     done with every message and its database holds the expected state
//     (wait.go), sampling this process's memory from its start to its stop
//     (peak.go) and reading its own metrics (histograms in hist.go);
//   - runs the ceilings (read.go; pgx.go writes the final state that
//     final.go computes from the decoded backlog);
//   - adds a row per variant, ratios and targets to a scenarioResult, which
//     report.go prints as a table and writes as JSON (--out); output.go
//     shows progress on stderr.
//
// # Processes: what is measured
//
// The bridge under test runs in this process, because what the bench
// reports of it are this process's figures: CPU time from getrusage, peak
// RSS from /proc/self/status (proc.go), the Go heap from runtime/metrics.
// Everything else runs in child processes of the same binary, so that it
// does not count: the broker is `stb kafka` (broker.go), and every load is
// published by `stb bench produce` (the spec on stdin, progress lines on
// stdout; see produce.go and `stb bench produce --help`). A producer is
// not a goroutine because simulating, encoding and producing at ten times
// what the database absorbs takes a good share of a core, and the overload
// scenario's producers build the whole window's messages before sending
// them, hundreds of MiB that would be counted as the bridge's peak RSS; the
// steady scenario holds the bridge's CPU time per 1,000 bundles to a
// target. The producers' and the broker's CPU time are read from /proc and
// shown beside the bridge's.
//
// # Shape
//
// No convention of docs/conventions.md is about a benchmark harness; the
// parts follow the house shapes where they apply: the scenarios are one explicit list, as the
// syncers are (one explicit list; watermill's AddHandler); Config has
// DefaultConfig and Validate (config structs; watermill's RouterConfig); every
// goroutine and child process has an owner that waits for it or ends it
// (goroutine owners: memSampler.Stop, benchBridge.stop, benchProducer.stop, the broker's
// close; the children also get SIGKILL when the bench dies).
package bench
