package transport

import "testing"

func TestConsumerConfigKeepsMandatorySettings(t *testing.T) {
	c := DefaultConfig()
	c.Brokers, c.Topics = "b:1", []string{"t"}
	c.Properties = map[string]string{"client.id": "custom", "session.timeout.ms": "10000"}
	m := *c.withDefaults().consumerConfig()
	for k, v := range mandatoryProperties {
		if m[k] != v {
			t.Errorf("%s = %v, want %s", k, m[k], v)
		}
	}
	for k, want := range map[string]any{
		"bootstrap.servers": "b:1", "group.id": "stb", "auto.offset.reset": "earliest",
		"client.id": "custom", "session.timeout.ms": "10000", "go.logs.channel.enable": true,
	} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
}

func TestMaxBundleBytesFloor(t *testing.T) {
	for in, want := range map[int]int{0: DefaultMaxBundleBytes, 1: MinMaxBundleBytes, MinMaxBundleBytes - 1: MinMaxBundleBytes, 1 << 20: 1 << 20} {
		if got := (Config{MaxBundleBytes: in}).withDefaults().MaxBundleBytes; got != want {
			t.Errorf("MaxBundleBytes %d became %d, want %d", in, got, want)
		}
	}
}
