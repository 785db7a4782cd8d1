package transport_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// TestMalformedLetteredAtRead: data that is not JSON is a bad_payload
// reject when read, in both wire profiles, whatever follows it. Late
// decoding left it raw on its bundle, to be found when a worker decoded
// it, so one replaced by a newer bundle of its hub and type before that
// was never dead-lettered: a flood of 18,000 made 3,272 letters, which
// ones depending on timing (issue 34, item 10). Here every other message
// of one hub and type is malformed, each followed by a good newer one that
// would replace it.
func TestMalformedLetteredAtRead(t *testing.T) {
	const n = 100
	bad := [][]byte{[]byte(`{"objects":[{"metadata":`), []byte("\x00\x01binary"), []byte(`[}`), []byte(`{"objects":[]} trailing`)}
	for _, profile := range []struct {
		name   string
		encode func(i int, data []byte) *kafka.Message
		decode func(*kafka.Message, transport.Rules, time.Time) (*bundle.Bundle, *transport.Reject)
	}{
		{"stb", func(i int, data []byte) *kafka.Message {
			env := validEnvelope("status", "hub-flood")
			env.Type = "managedclusters"
			env.ID = fmt.Sprintf("e-%d", i)
			env.Version = bundle.Version{Incarnation: 1, Generation: uint64(i)}
			env.Data = data
			return consumed(mustEncode(t, env), 0, int64(i))
		}, transport.Decode},
		{"globalhub", func(i int, data []byte) *kafka.Message {
			e := ghEvent("gh-status.hub-flood", "hub-flood", "managedcluster")
			e.ID = fmt.Sprintf("e-%d", i)
			e.Version = fmt.Sprintf("%d.%d", i, i)
			e.Data = data
			return consumed(ghEncode(t, e), 0, int64(i))
		}, transport.NewGlobalHub().Decode},
	} {
		t.Run(profile.name, func(t *testing.T) {
			rules := ghRules(t)
			good := ghEvent("", "", "managedcluster").Data
			if profile.name == "stb" {
				good = []byte(`{"objects":[{"metadata":{"name":"c1","uid":"u1"}}]}`)
			}
			lettered, bundles := 0, 0
			for i := range 2 * n {
				data, malformed := good, i%2 == 0
				if malformed {
					data = bad[i/2%len(bad)]
				}
				b, rej := profile.decode(profile.encode(i, data), rules, time.Now())
				switch {
				case malformed && rej != nil && rej.Reason == deadletter.BadPayload:
					lettered++
				case !malformed && b != nil:
					bundles++
				case malformed:
					if i < 8 {
						t.Errorf("message %d, data %q: bundle %v, reject %v; want a bad_payload reject", i, data, b != nil, rej)
					}
				default:
					t.Errorf("message %d, good data: rejected: %v", i, rej)
				}
			}
			if lettered != n || bundles != n {
				t.Errorf("%d malformed messages, each followed by a newer good one: %d rejected bad_payload when read, want all; %d good ones read, want %d", n, lettered, bundles, n)
			}
		})
	}
}

// TestMalformedRunStart: a global-hub event whose data is not JSON is
// lettered when read, but its version is mapped first: when it starts the
// agent's run (a heartbeat of generation 0 after a restart), the run's
// next events are of the new run, newer than the run before, not taken as
// stale events of it.
func TestMalformedRunStart(t *testing.T) {
	rules := ghRules(t)
	gh := transport.NewGlobalHub()
	offset := int64(0)
	read := func(id, version string, data []byte) (*bundle.Bundle, *transport.Reject) {
		e := ghEvent("gh-status.hub-run", "hub-run", "managedhub.heartbeat")
		e.ID, e.Version, e.Data = id, version, data
		m := consumed(ghEncode(t, e), 0, offset)
		offset++
		return gh.Decode(m, rules, time.Now())
	}
	var last bundle.Version
	for i := range 6 {
		b, rej := read(fmt.Sprintf("old-%d", i), fmt.Sprintf("%d.%d", i, i), []byte(`[]`))
		if rej != nil {
			t.Fatal(rej)
		}
		last = b.Version
	}
	if _, rej := read("new-0", "0.0", []byte(`[`)); rej == nil || rej.Reason != deadletter.BadPayload {
		t.Fatalf("the new run's first event, not JSON: %v, want a bad_payload reject", rej)
	}
	for i := 1; i <= 3; i++ {
		b, rej := read(fmt.Sprintf("new-%d", i), fmt.Sprintf("%d.%d", i, i), []byte(`[]`))
		if rej != nil {
			t.Fatal(rej)
		}
		if !b.Version.Newer(last) {
			t.Fatalf("event %d of the new run maps to %v, not newer than the run before's %v: dropped as stale", i, b.Version, last)
		}
		last = b.Version
	}
}
