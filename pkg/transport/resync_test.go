package transport

import (
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

func TestResyncRequestRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	req := ResyncRequest{Hub: "hub a/1", BundleType: "compliance", Reason: "dependency_missing",
		WaitingType: "compliancedelta", WaitingVersion: "3.41", Dependency: "3.40", Processed: "3.12"}
	msg, err := EncodeResync("status-resync", DefaultTypePrefix, req, at)
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Key) != "hub a/1" || *msg.TopicPartition.Topic != "status-resync" {
		t.Fatalf("key %q topic %q", msg.Key, *msg.TopicPartition.Topic)
	}
	headers := map[string]string{}
	for _, h := range msg.Headers {
		headers[h.Key] = string(h.Value)
	}
	// Binary mode: the attributes are ce_ headers, the data the value.
	if headers["ce_type"] != "io.stb.status.v1.compliance.resync_request" || headers["ce_subject"] != "hub a/1" ||
		headers["ce_source"] != ResyncSource || headers["ce_specversion"] != "1.0" || !strings.HasPrefix(string(msg.Value), "{") {
		t.Fatalf("headers %v, value %s", headers, msg.Value)
	}
	got, err := DecodeResync(msg, DefaultTypePrefix)
	if err != nil {
		t.Fatal(err)
	}
	if got != req {
		t.Fatalf("decoded %+v, want %+v", got, req)
	}
}

func TestDecodeResyncRefuses(t *testing.T) {
	ok, err := EncodeResync("t", DefaultTypePrefix, ResyncRequest{Hub: "h", BundleType: "compliance"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	withHeader := func(k, v string) *kafka.Message {
		m := *ok
		m.Headers = nil
		for _, h := range ok.Headers {
			if h.Key == k {
				h.Value = []byte(v)
			}
			m.Headers = append(m.Headers, h)
		}
		return &m
	}
	for name, msg := range map[string]*kafka.Message{
		"a status event":    withHeader("ce_type", "io.stb.status.v1.compliance"),
		"another prefix":    withHeader("ce_type", "io.other.v1.compliance.resync_request"),
		"no bundle type":    withHeader("ce_type", "io.stb.status.v1..resync_request"),
		"not a cloud event": {Value: []byte("x")},
		"bad data":          func() *kafka.Message { m := *ok; m.Value = []byte("{"); return &m }(),
	} {
		if _, err := DecodeResync(msg, DefaultTypePrefix); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := EncodeResync("t", DefaultTypePrefix, ResyncRequest{Hub: "h"}, time.Now()); err == nil {
		t.Error("a request without a bundle type was encoded")
	}
}
