package bridge

import (
	"fmt"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/transport"
)

// Preflight checks the configuration as far as it can be checked without
// touching the database or Kafka: Validate, the reader's own checks, and
// the Kafka properties as librdkafka reads them. New does its side effects
// (migrations first) before it creates the consumer, which is where
// librdkafka refuses an unknown or malformed property, so `stb run` calls
// Preflight first: a typo in --kafka-property fails before anything is
// migrated.
func Preflight(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := cfg.Reader.Validate(); err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	return checkKafkaProperties(cfg.Reader.Properties)
}

// checkKafkaProperties has librdkafka parse props by creating a consumer
// with them and closing it at once. It is given no bootstrap servers, so
// it connects to nothing; its log is off, so it warns of nothing. Values
// of secret properties are redacted from the error.
func checkKafkaProperties(props map[string]string) error {
	if len(props) == 0 {
		return nil
	}
	m := kafka.ConfigMap{"group.id": "stb-preflight"}
	for k, v := range props {
		m[k] = v
	}
	delete(m, "bootstrap.servers")
	m["log_level"] = 0
	c, err := kafka.NewConsumer(&m)
	if err != nil {
		return fmt.Errorf("--kafka-property: librdkafka refuses it: %w (the properties are librdkafka's, see its CONFIGURATION.md)",
			transport.RedactError(err, props))
	}
	c.Close()
	return nil
}
