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
// Metrics (all counters unless noted). The reader's (metrics.go):
//
//	stb_transport_messages_total{topic,outcome}   messages read; topic is the --kafka-topics entry
//	                                              (a topic, or the pattern that matched it);
//	                                              outcome accepted|rejected
//	stb_transport_rejected_total{reason}          rejected messages (dead letters) by reason
//	stb_transport_skipped_total{type}             valid messages of a type known not to be stored;
//	                                              type from a bounded set: a global-hub bundle
//	                                              type, a family's name, or other
//	stb_transport_assignments_total{start}        partitions assigned; start stored|reset|group
//	stb_transport_assigned_partitions             gauge: partitions currently assigned
//	stb_transport_offset_out_of_range_total       partitions restarted at auto.offset.reset
//	stb_transport_pauses_total                    reading paused over --max-buffered-bytes
//	stb_transport_resumes_total                   reading resumed below 80 % of it
//	stb_transport_paused_partitions               gauge: partitions paused by backpressure now
//	stb_transport_handoffs_total                  batches the poll loop handed to decoding
//	stb_transport_kafka_errors_total{code}        errors reported by the Kafka client
//
// From librdkafka's statistics (stats.go, every statistics.interval.ms); the
// per-partition gauges are served at scrape time for the partitions assigned
// now:
//
//	stb_kafka_consumer_lag_messages{topic,partition}  gauge: the client's consumer lag
//	stb_kafka_high_watermark_offset{topic,partition}  gauge: high watermark
//	stb_kafka_broker_rtt_seconds{broker}              gauge: average broker round-trip time
//
// The per-partition gauges of a topic read by a pattern are summed into one
// series with an empty partition label (TopicLabels).
package transport
