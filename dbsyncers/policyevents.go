package dbsyncers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// PolicyEvent is one event of a policy on one cluster, as a hub reported
// it. Time is when it happened; zero when the hub sent none.
type PolicyEvent struct {
	PolicyID    string
	ClusterName string
	EventName   string
	Reason      string
	Message     string
	Time        time.Time
}

// PolicyEventsPayload is the decoded data of a policyevents bundle: its
// events sorted by policy, cluster and event name, one per key (the first
// listed: an event is written once and never updated).
type PolicyEventsPayload struct {
	Events []PolicyEvent
}

// PolicyEvents returns the syncer of "policyevents" bundles: a stream of
// events, every one of which is stored once in stb.policy_events.
func PolicyEvents() Syncer {
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: "policyevents", Kind: bundle.Stream},
		Decode:   decodePolicyEvents,
		Plan:     planPolicyEvents,
	}
}

// decodePolicyEvents reads {"objects":[{"policyId","clusterName",
// "eventName","reason","message","time"}...]}. policyId, clusterName and
// eventName identify the event and are required; time, when given and not
// empty, is RFC 3339.
func decodePolicyEvents(data []byte) (any, error) {
	events := []PolicyEvent{}
	reset := func() { events = events[:0] }
	err := eachObject(data, true, reset, func(_ int, d *jsonscan.Decoder) error {
		var e PolicyEvent
		var eventTime string
		err := d.Object(func(field []byte) error {
			switch string(field) {
			case "policyId":
				return setString(d, &e.PolicyID, "policyId")
			case "clusterName":
				return setString(d, &e.ClusterName, "clusterName")
			case "eventName":
				return setString(d, &e.EventName, "eventName")
			case "reason":
				return setString(d, &e.Reason, "reason")
			case "message":
				return setString(d, &e.Message, "message")
			case "time":
				return setString(d, &eventTime, "time")
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := checkEvent(e); err != nil {
			return err
		}
		if eventTime != "" {
			if e.Time, err = time.Parse(time.RFC3339, eventTime); err != nil {
				return fmt.Errorf("time: %w", err)
			}
		}
		events = append(events, e)
		return nil
	})
	if err != nil {
		return nil, badPayload(fmt.Errorf("policyevents %w", err))
	}
	return &PolicyEventsPayload{Events: firstPerEvent(events)}, nil
}

// checkEvent checks what the table needs of an event.
func checkEvent(e PolicyEvent) error {
	for _, f := range []struct{ name, s string }{{"policyId", e.PolicyID}, {"clusterName", e.ClusterName}, {"eventName", e.EventName}} {
		if err := checkName(f.name, f.s); err != nil {
			return err
		}
	}
	if err := checkText("reason", e.Reason); err != nil {
		return err
	}
	return checkText("message", e.Message)
}

// compareEvent orders events by the table's key.
func compareEvent(a, b PolicyEvent) int {
	return cmp.Or(strings.Compare(a.PolicyID, b.PolicyID),
		strings.Compare(a.ClusterName, b.ClusterName),
		strings.Compare(a.EventName, b.EventName))
}

// firstPerEvent sorts events by key, in place, and keeps the first given
// of each key, as ON CONFLICT DO NOTHING keeps the stored one.
func firstPerEvent(events []PolicyEvent) []PolicyEvent {
	unique := true
	for i := 1; i < len(events) && unique; i++ {
		unique = compareEvent(events[i-1], events[i]) < 0
	}
	if unique {
		return events // sorted and unique already: one decoded bundle
	}
	// Stable, so the first given of equal keys stays first.
	slices.SortStableFunc(events, compareEvent)
	return slices.CompactFunc(events, func(a, b PolicyEvent) bool { return compareEvent(a, b) == 0 })
}

// insertEventsSQL stores events not stored yet: a replayed bundle, or an
// event a hub sends again, writes nothing.
const insertEventsSQL = `
INSERT INTO stb.policy_events AS t (hub, policy_id, cluster_name, event_name, reason, message, created_at)
SELECT $1, s.policy_id, s.cluster_name, s.event_name, s.reason, s.message, s.created_at
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
	AS s(policy_id, cluster_name, event_name, reason, message, created_at)
ON CONFLICT (hub, policy_id, cluster_name, event_name) DO NOTHING`

// planPolicyEvents stores the events of a group of a hub's event
// bundles, in order, with one INSERT. An event without a time of its own
// gets the time its bundle was produced, or none if that is unknown too.
func planPolicyEvents(bundles []*bundle.Bundle) (Write, error) {
	events := []PolicyEvent{}
	for _, b := range bundles {
		p, err := payloadOf[PolicyEventsPayload](b)
		if err != nil {
			return Write{}, err
		}
		for i, e := range p.Events {
			if err := checkEvent(e); err != nil {
				return Write{}, &PermanentError{Reason: deadletter.BadPayload, Err: fmt.Errorf("policyevents %s of hub %q: event %d: %w", b.Version, b.Hub, i, err)}
			}
			if e.Time.IsZero() {
				e.Time = b.EventTime
			}
			events = append(events, e)
		}
	}
	events = firstPerEvent(events) // events is ours: sorting it leaves the payloads alone
	if len(events) == 0 {
		return Write{}, nil
	}
	n := len(events)
	policyIDs, clusters, names := make([]string, n), make([]string, n), make([]string, n)
	reasons, messages, times := make([]string, n), make([]string, n), make([]pgtype.Timestamptz, n)
	for i, e := range events {
		policyIDs[i], clusters[i], names[i] = e.PolicyID, e.ClusterName, e.EventName
		reasons[i], messages[i] = e.Reason, e.Message
		times[i] = pgtype.Timestamptz{Time: e.Time, Valid: !e.Time.IsZero()}
	}
	return Write{Statements: []Statement{{What: "insert policy events", SQL: insertEventsSQL,
		Args: []any{bundles[0].Hub, policyIDs, clusters, names, reasons, messages, times}}}}, nil
}
