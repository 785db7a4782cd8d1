// Package transport is the bridge's Kafka edge: it reads hub status bundles
// from Kafka and, for producers such as the simulator and the tests, writes
// them.
//
// The Reader is the first stage of the pipeline. It owns a confluent-kafka-go
// consumer, subscribes with a rebalance callback that starts each assigned
// partition at the position stored in Postgres (status.transport) when that
// position belongs to the same Kafka cluster, and turns every message into a
// bundle.Bundle through Decode: the kafka_confluent binding reads the binary
// mode CloudEvent, which is then validated (attributes, type, versions, size,
// source against key); its data is kept raw, for the worker that writes the
// bundle to decode (most bundles are replaced before that). Each
// offset is registered with the committer before its bundle is handed to the
// Sink (the conflation manager), so the committed position never passes a
// message still held anywhere. A message that cannot become a bundle is a
// Reject: logged, counted, handed to the dead-letter writer and marked done,
// so a bad message never stops its partition.
//
// Encode and Publisher are the writing side: an Envelope becomes a CloudEvents
// 1.0 binary-mode Kafka message keyed by hub, so that all of a hub's bundles
// share one partition and its order.
//
// Metrics (all counters unless noted):
//
//	stb_transport_messages_total{topic,outcome}  messages read; outcome accepted|rejected
//	stb_transport_rejected_total{reason}         rejected messages by reason
//	stb_transport_assignments_total{start}       partitions assigned; start stored|reset|group
//	stb_transport_assigned_partitions            gauge: partitions currently assigned
//	stb_transport_kafka_errors_total{code}       errors reported by the Kafka client
package transport
