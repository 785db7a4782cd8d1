package transport_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/protocol/kafka_confluent/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// authedHubCase is a heartbeat with or without the authedhub extension,
// the hub the transport vouches for (upstream: pkg/transport/identity/
// identity.go, ExtensionAuthedHub), read from the case's per-hub topic or
// from the shared one.
type authedHubCase struct {
	name string
	// shared reads the event from the shared topic "gh-status".
	shared bool
	// authed says the event carries authedhub, of value authedHub: the
	// event's own source when it is "<source>".
	authed    bool
	authedHub string
	reason    deadletter.Reason
}

// event is a heartbeat of hub as the case has it.
func (c authedHubCase) event(topic, hub string) transport.GlobalHubEvent {
	if c.shared {
		topic = "gh-status"
	}
	e := ghEvent(topic, hub, "managedhub.heartbeat")
	if c.authed {
		v := c.authedHub
		if v == "<source>" {
			v = hub
		}
		e.Extensions = map[string]string{"authedhub": v}
	}
	return e
}

// authedHubCases are upstream's rule for the hub of a status event: when
// authedhub is present the source must be it, else the source is taken
// (upstream: pkg/transport/identity/identity.go, LeafHubForStatusEvent).
func authedHubCases() []authedHubCase {
	return []authedHubCase{
		// identity_test.go, TestLeafHubForStatusEvent "matching authed hub".
		{name: "authedhub of its source on the shared topic", shared: true, authed: true, authedHub: "<source>"},
		// identity.go, EnrichManagerStatusEvent: on a per-hub topic
		// authedhub is the topic's hub (HubFromStatusTopic).
		{name: "authedhub of its source on its per-hub topic", authed: true, authedHub: "<source>"},
		// identity_test.go, TestLeafHubForStatusEvent "spoofed source
		// rejected".
		{name: "authedhub of another hub on the shared topic", shared: true, authed: true, authedHub: "hub-other", reason: deadletter.SourceMismatch},
		// identity.go, EnrichManagerStatusEvent and LeafHubForStatusEvent:
		// on a per-hub topic the topic's hub is the authenticated one
		// (upstream's manager sets authedhub to it, over what came) and
		// the source must be it; an authedhub of another hub contradicts
		// the topic and is refused.
		{name: "authedhub of another hub on its per-hub topic", authed: true, authedHub: "hub-other", reason: deadletter.SourceMismatch},
		// identity_test.go, TestLeafHubForStatusEvent "fallback without
		// authed hub".
		{name: "no authedhub on the shared topic", shared: true},
		// identity.go, AuthedHub: an empty authedhub is none.
		{name: "empty authedhub on the shared topic", shared: true, authed: true, authedHub: ""},
	}
}

// TestGlobalHubAuthedHubStructured: a structured-mode event is held to
// the authedhub rule as a binary-mode one (authedHubCases, which
// TestGlobalHubDecode reads in binary mode).
func TestGlobalHubAuthedHubStructured(t *testing.T) {
	for i, c := range authedHubCases() {
		t.Run(c.name, func(t *testing.T) {
			hub := "hub-s" + strconv.Itoa(i)
			m := consumed(ghEncode(t, c.event("gh-status."+hub, hub)), 0, int64(i))
			ev, err := binding.ToEvent(context.Background(), kafka_confluent.NewMessage(m))
			if err != nil {
				t.Fatal(err)
			}
			value, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			m.Headers = []kafka.Header{{Key: "content-type", Value: []byte(event.ApplicationCloudEventsJSON)}}
			m.Value = value
			if transport.ReadsPlainBinary(m) {
				t.Fatal("a structured-mode message read as binary mode")
			}
			b, rej := transport.NewGlobalHub().Decode(m, ghRules(t), time.Now())
			switch {
			case c.reason == "" && rej != nil:
				t.Fatalf("rejected (%s): %v", rej.Reason, rej.Err)
			case c.reason == "" && b.Hub != hub:
				t.Fatalf("bundle of hub %q, want %q", b.Hub, hub)
			case c.reason != "" && (rej == nil || rej.Reason != c.reason || rej.Hub != hub):
				t.Fatalf("bundle %+v, reject %+v; want reject %s of hub %q", b, rej, c.reason, hub)
			}
		})
	}
}
