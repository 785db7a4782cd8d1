// Package broker runs an embedded Kafka broker for local use: `stb kafka`,
// `stb demo` and the tests of the packages that talk to Kafka.
//
// It wraps franz-go's kfake, a Kafka protocol server that runs in-process,
// and listens on 127.0.0.1 over TCP so that real clients (the confluent
// consumer of pkg/transport included) connect to it exactly as they would to
// a production cluster. With a data directory its topics, records and group
// offsets survive a restart, which is what the restart and replay scenarios
// need; without one everything lives in memory.
//
// It is not part of the bridge's data path: production deployments point
// the bridge at a real Kafka cluster.
package broker
