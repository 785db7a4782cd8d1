// Package deadletter records in stb.dead_letters what the bridge will
// never apply: messages rejected on read and bundles whose write failed
// permanently. A dead letter keeps enough to investigate and replay by
// hand: hub, type, version, Kafka origin, reason, error, and the raw event
// (headers and data, capped).
package deadletter
