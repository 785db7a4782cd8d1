package dbsyncers

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/jsonscan"
)

// GHEvent is one Kubernetes event a global-hub agent reports: about a
// managed cluster (event.managedcluster) or a policy (event.localrootpolicy,
// event.localreplicatedpolicy). The object is kept whole in the payload
// column; the fields below are the ones the tables index or show.
type GHEvent struct {
	Name, Namespace string
	// CreatedAt is createdAt as sent (RFC 3339); with Name (and Count, for
	// policy events) it identifies the event on its hub.
	CreatedAt  string
	Count      int64
	PolicyID   string
	Cluster    string
	ClusterID  string
	Compliance string // compliant, non_compliant, pending, unknown
	Reason     string
	Message    string
	Type       string // Normal, Warning (cluster events)
	Object     json.RawMessage
}

// GHEventsPayload is the decoded data of a global-hub event type: the
// events of one message, in the order sent.
type GHEventsPayload struct {
	Events []GHEvent
}

// eventKind says what a global-hub event type requires of its events.
type eventKind struct {
	typ        string
	needPolicy bool
}

// GlobalHubManagedClusterEvent returns the syncer of event.managedcluster:
// a stream (every event stored once, none conflated; nothing is implied by
// what is not sent) into event.managed_cluster_events.
func GlobalHubManagedClusterEvent() Syncer {
	k := eventKind{typ: GHManagedClusterEvent}
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: k.typ, Kind: bundle.Stream},
		Decode:   k.decode,
		Plan:     planGHClusterEvents,
	}
}

// PolicyEventKind tells the two kinds of policy event apart in
// event.local_policy_events.kind, whose CHECK constraint lists the same
// (TestSchemaValuesMatchGo in pkg/db).
type PolicyEventKind string

// The kinds of policy event.
const (
	// RootPolicyEvents are events of the hub's root policies.
	RootPolicyEvents PolicyEventKind = "root"
	// ReplicatedPolicyEvents are events of the policies replicated to the
	// managed clusters.
	ReplicatedPolicyEvents PolicyEventKind = "replicated"
)

// AllPolicyEventKinds lists every kind.
var AllPolicyEventKinds = []PolicyEventKind{RootPolicyEvents, ReplicatedPolicyEvents}

// GlobalHubRootPolicyEvent returns the syncer of event.localrootpolicy:
// events of the hub's root policies, a stream into
// event.local_policy_events (kind root).
func GlobalHubRootPolicyEvent() Syncer {
	k := eventKind{typ: GHRootPolicyEvent, needPolicy: true}
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: k.typ, Kind: bundle.Stream},
		Decode:   k.decode,
		Plan:     planGHPolicyEvents(RootPolicyEvents),
	}
}

// GlobalHubReplicatedPolicyEvent returns the syncer of
// event.localreplicatedpolicy: events of the policies replicated to the
// managed clusters, a stream into event.local_policy_events (kind
// replicated).
func GlobalHubReplicatedPolicyEvent() Syncer {
	k := eventKind{typ: GHReplicatedPolicyEvent, needPolicy: true}
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: k.typ, Kind: bundle.Stream},
		Decode:   k.decode,
		Plan:     planGHPolicyEvents(ReplicatedPolicyEvents),
	}
}

// decode reads the events of one message: a JSON array of event objects
// (sendmode batch, the default) or one event object (sendmode single; the
// transport checks that the shape agrees with the extension). eventName
// and createdAt are required, and for policy events policyId: they are the
// event's identity. An empty array is an empty batch.
func (k eventKind) decode(data []byte) (any, error) {
	if jsonscan.IsNull(data) {
		return nil, badPayload(fmt.Errorf("%s: want an event or an array of events, got null", k.typ))
	}
	p := &GHEventsPayload{}
	d := jsonscan.NewDecoder(data)
	var err error
	if first := firstByte(data); first == '{' {
		var e GHEvent
		if e, err = k.decodeEvent(d); err == nil {
			p.Events = append(p.Events, e)
		}
	} else {
		i := 0
		err = d.Array(func() error {
			e, err := k.decodeEvent(d)
			if err != nil {
				return fmt.Errorf("event %d: %w", i, err)
			}
			p.Events = append(p.Events, e)
			i++
			return nil
		})
	}
	if err == nil {
		err = d.Done()
	}
	if err != nil {
		return nil, badPayload(fmt.Errorf("%s: %w", k.typ, err))
	}
	return p, nil
}

// firstByte returns the first byte of data that is not JSON white space.
func firstByte(data []byte) byte {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

func (k eventKind) decodeEvent(d *jsonscan.Decoder) (GHEvent, error) {
	var e GHEvent
	var count []byte
	obj, err := d.Span(func() error {
		return d.Object(func(name []byte) error {
			switch string(name) {
			case "eventName":
				return setString(d, &e.Name, "eventName")
			case "eventNamespace":
				return setString(d, &e.Namespace, "eventNamespace")
			case "createdAt":
				return setString(d, &e.CreatedAt, "createdAt")
			case "count":
				var err error
				count, err = d.Raw()
				return err
			case "policyId":
				return setString(d, &e.PolicyID, "policyId")
			case "clusterName":
				return setString(d, &e.Cluster, "clusterName")
			case "clusterId":
				return setString(d, &e.ClusterID, "clusterId")
			case "compliance":
				return setString(d, &e.Compliance, "compliance")
			case "reason":
				return setString(d, &e.Reason, "reason")
			case "message":
				return setString(d, &e.Message, "message")
			case "type":
				return setString(d, &e.Type, "type")
			}
			return nil
		})
	})
	if err != nil {
		return e, err
	}
	if err := checkName("eventName", e.Name); err != nil {
		return e, err
	}
	if e.CreatedAt == "" {
		return e, fmt.Errorf("createdAt is missing or empty")
	}
	if _, err := time.Parse(time.RFC3339Nano, e.CreatedAt); err != nil {
		return e, fmt.Errorf("createdAt: %w", err)
	}
	if len(count) > 0 && string(count) != "null" {
		if e.Count, err = strconv.ParseInt(string(count), 10, 32); err != nil {
			return e, fmt.Errorf("count %s: not a 32-bit integer", count)
		}
	}
	if k.needPolicy {
		if err := checkName("policyId", e.PolicyID); err != nil {
			return e, err
		}
	}
	for _, f := range []struct{ name, v string }{
		{"eventNamespace", e.Namespace}, {"clusterName", e.Cluster}, {"clusterId", e.ClusterID},
		{"compliance", e.Compliance}, {"reason", e.Reason}, {"message", e.Message}, {"type", e.Type},
	} {
		if err := checkText(f.name, f.v); err != nil {
			return e, err
		}
	}
	e.Compliance = ghComplianceState(e.Compliance).String()
	e.Object = obj
	return e, nil
}

// ghComplianceState maps an event's compliance ("Compliant",
// "NonCompliant", "Pending", …) to the states status.compliance uses;
// anything else is unknown, as the agent's manager maps it.
func ghComplianceState(s string) ComplianceState {
	switch s {
	case "Compliant":
		return Compliant
	case "NonCompliant":
		return NonCompliant
	case "Pending":
		return PendingCompliance
	}
	return UnknownCompliance
}

// eventColumns holds the events of a group as parallel columns.
type eventColumns struct {
	names, namespaces, created, counts, policies, clusters, clusterIDs, compliance, reasons, messages, types, objects []string
}

func eventColumnsOf(bundles []*bundle.Bundle) (*eventColumns, error) {
	c := &eventColumns{}
	for _, b := range bundles {
		p, err := payloadOf[GHEventsPayload](b)
		if err != nil {
			return nil, err
		}
		for _, e := range p.Events {
			c.names = append(c.names, e.Name)
			c.namespaces = append(c.namespaces, e.Namespace)
			c.created = append(c.created, e.CreatedAt)
			c.counts = append(c.counts, strconv.FormatInt(e.Count, 10))
			c.policies = append(c.policies, e.PolicyID)
			c.clusters = append(c.clusters, e.Cluster)
			c.clusterIDs = append(c.clusterIDs, e.ClusterID)
			c.compliance = append(c.compliance, e.Compliance)
			c.reasons = append(c.reasons, e.Reason)
			c.messages = append(c.messages, e.Message)
			c.types = append(c.types, e.Type)
			c.objects = append(c.objects, string(e.Object))
		}
	}
	return c, nil
}

// An event read twice (a replay, a resent batch) is stored once: the
// inserts do nothing on a key already there.
const (
	insertGHClusterEventsSQL = `
INSERT INTO event.managed_cluster_events
	(hub, event_name, created_at, event_namespace, cluster_name, cluster_id, reason, message, event_type, payload)
SELECT $1, s.name, s.created::timestamptz, s.ns, s.cluster, s.cluster_id, s.reason, s.message, s.type, s.payload::jsonb
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
	AS s(name, created, ns, cluster, cluster_id, reason, message, type, payload)
ON CONFLICT DO NOTHING`

	insertGHPolicyEventsSQL = `
INSERT INTO event.local_policy_events
	(hub, kind, event_name, event_count, created_at, event_namespace, policy_id, cluster_name, cluster_id, compliance, reason, message, payload)
SELECT $1, $2, s.name, s.count::integer, s.created::timestamptz, s.ns, s.policy, s.cluster, s.cluster_id, s.compliance, s.reason, s.message, s.payload::jsonb
FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[])
	AS s(name, count, created, ns, policy, cluster, cluster_id, compliance, reason, message, payload)
ON CONFLICT DO NOTHING`
)

func planGHClusterEvents(bundles []*bundle.Bundle) (Write, error) {
	c, err := eventColumnsOf(bundles)
	if err != nil || len(c.names) == 0 {
		return Write{}, err
	}
	return Write{Statements: []Statement{{What: "insert managed cluster events", SQL: insertGHClusterEventsSQL, Args: []any{
		bundles[0].Hub, c.names, c.created, c.namespaces, c.clusters, c.clusterIDs, c.reasons, c.messages, c.types, c.objects}}}}, nil
}

func planGHPolicyEvents(kind PolicyEventKind) func([]*bundle.Bundle) (Write, error) {
	return func(bundles []*bundle.Bundle) (Write, error) {
		c, err := eventColumnsOf(bundles)
		if err != nil || len(c.names) == 0 {
			return Write{}, err
		}
		return Write{Statements: []Statement{{What: "insert " + string(kind) + " policy events", SQL: insertGHPolicyEventsSQL, Args: []any{
			bundles[0].Hub, string(kind), c.names, c.counts, c.created, c.namespaces, c.policies, c.clusters, c.clusterIDs,
			c.compliance, c.reasons, c.messages, c.objects}}}}, nil
	}
}
