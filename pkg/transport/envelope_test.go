package transport_test

import (
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/transport"
)

func ExampleEncode() {
	msg, err := transport.Encode(transport.Envelope{
		Topic:      "status",
		Hub:        "hub-1",
		Type:       "compliance",
		ID:         "3f1c",
		Version:    bundle.Version{Incarnation: 2, Generation: 41},
		Dependency: &bundle.Version{Incarnation: 2, Generation: 40},
		Time:       time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Data:       []byte(`{"objects":[]}`),
	}, transport.DefaultTypePrefix)
	if err != nil {
		panic(err)
	}
	fmt.Printf("key %s value %s\n", msg.Key, msg.Value)
	var headers []string
	for _, h := range msg.Headers {
		headers = append(headers, h.Key+": "+string(h.Value))
	}
	sort.Strings(headers)
	for _, h := range headers {
		fmt.Println(h)
	}
	// Output:
	// key hub-1 value {"objects":[]}
	// ce_extdependencyversion: 2.40
	// ce_extversion: 2.41
	// ce_id: 3f1c
	// ce_source: hub-1
	// ce_specversion: 1.0
	// ce_time: 2026-03-01T12:00:00Z
	// ce_type: io.stb.status.v1.compliance
	// content-type: application/json
}

func TestEncodeRefusesIncompleteEnvelopes(t *testing.T) {
	for name, env := range map[string]transport.Envelope{
		"no topic": {Hub: "h", Type: "heartbeat"},
		"no hub":   {Topic: "t", Type: "heartbeat"},
		"no type":  {Topic: "t", Hub: "h"},
	} {
		if _, err := transport.Encode(env, transport.DefaultTypePrefix); !errors.Is(err, transport.ErrInvalidEnvelope) {
			t.Errorf("%s: Encode = %v, want ErrInvalidEnvelope", name, err)
		}
	}
}

func TestEncodeFillsIDAndTime(t *testing.T) {
	before := time.Now()
	msg, err := transport.Encode(transport.Envelope{Topic: "t", Hub: "h", Type: "heartbeat"}, transport.DefaultTypePrefix)
	if err != nil {
		t.Fatal(err)
	}
	id, ok := header(msg, "ce_id")
	if !ok || id == "" {
		t.Error("no id generated")
	}
	ts, _ := header(msg, "ce_time")
	if tm, err := time.Parse(time.RFC3339Nano, ts); err != nil || tm.Before(before.Add(-time.Second)) {
		t.Errorf("time %q is not now", ts)
	}
}
