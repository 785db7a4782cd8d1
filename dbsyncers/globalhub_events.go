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
// managed cluster (event.managedcluster: upstream's models.
// ManagedClusterEvent) or a policy (event.localrootpolicy,
// event.localreplicatedpolicy: pkg/bundle/event RootPolicyEvent,
// ReplicatedPolicyEvent), as the columns of the global hub's event tables
// take it (pkg/database/models/event.go).
type GHEvent struct {
	Name, Namespace string
	// CreatedAt is createdAt as sent (RFC 3339); with the hub and Name
	// (cluster events) or with Name and Count (policy events) it
	// identifies the event.
	CreatedAt string
	Count     int64
	// PolicyID is the root policy's uid, lower case (policy events).
	PolicyID string
	Cluster  string
	// ClusterID is clusterId when it is a UUID (lower case), else "": the
	// event is then given the id of the hub's live cluster of its name.
	ClusterID string
	// Compliance is local_status.compliance_type's name of the event's
	// compliance (policy events).
	Compliance string
	Reason     string
	Message    string
	// Type is the event's type, Normal or Warning (cluster events).
	Type                                   string
	ReportingController, ReportingInstance string
	// Source is the event's source object as sent (policy events),
	// nil when it had none.
	Source json.RawMessage
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

// GlobalHubManagedClusterEvent returns the syncer of event.managedcluster
// into event.managed_clusters (manager/pkg/status/handlers/managedcluster/
// managedcluster_event_handler.go): a stream (every event stored once,
// none conflated; nothing is implied by what is not sent).
func GlobalHubManagedClusterEvent() Syncer {
	k := eventKind{typ: GHManagedClusterEvent}
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: k.typ, Kind: bundle.Stream},
		Decode:   k.decode,
		Plan:     planGHClusterEvents,
	}
}

// GlobalHubRootPolicyEvent returns the syncer of event.localrootpolicy:
// events of the hub's root policies, a stream into
// event.local_root_policies (manager/pkg/status/handlers/policy/
// local_root_policy_event_handler.go).
func GlobalHubRootPolicyEvent() Syncer {
	k := eventKind{typ: GHRootPolicyEvent, needPolicy: true}
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: k.typ, Kind: bundle.Stream},
		Decode:   k.decode,
		Plan:     planGHRootPolicyEvents,
	}
}

// GlobalHubReplicatedPolicyEvent returns the syncer of
// event.localreplicatedpolicy: events of the policies replicated to the
// managed clusters, a stream into event.local_policies (manager/pkg/status/
// handlers/policy/local_replicated_policy_event_handler.go).
func GlobalHubReplicatedPolicyEvent() Syncer {
	k := eventKind{typ: GHReplicatedPolicyEvent, needPolicy: true}
	return Syncer{
		TypeInfo: bundle.TypeInfo{Name: k.typ, Kind: bundle.Stream},
		Decode:   k.decode,
		Plan:     planGHReplicatedPolicyEvents,
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

// decodeEvent reads one event object.
//
// A policy event's policyId must be a UUID (policy_id is a uuid column;
// upstream's insert of another string fails the batch): the uid of the
// hub's root policy, always one. Its clusterId, and a cluster event's,
// is taken when it is a UUID; otherwise (missing, empty, anything else)
// the event is matched by its clusterName to the hub's live cluster when
// inserted (see insertGHClusterEventsSQL).
func (k eventKind) decodeEvent(d *jsonscan.Decoder) (GHEvent, error) {
	var e GHEvent
	var count, source []byte
	var clusterID string
	err := d.Object(func(name []byte) error {
		var err error
		switch string(name) {
		case "eventName":
			return setString(d, &e.Name, "eventName")
		case "eventNamespace":
			return setString(d, &e.Namespace, "eventNamespace")
		case "createdAt":
			return setString(d, &e.CreatedAt, "createdAt")
		case "count":
			count, err = d.Raw()
			return err
		case "source":
			source, err = d.Raw()
			return err
		case "policyId":
			return setString(d, &e.PolicyID, "policyId")
		case "clusterName":
			return setString(d, &e.Cluster, "clusterName")
		case "clusterId":
			return setString(d, &clusterID, "clusterId")
		case "compliance":
			return setString(d, &e.Compliance, "compliance")
		case "reason":
			return setString(d, &e.Reason, "reason")
		case "message":
			return setString(d, &e.Message, "message")
		case "type":
			return setString(d, &e.Type, "type")
		case "reportingController":
			return setString(d, &e.ReportingController, "reportingController")
		case "reportingInstance":
			return setString(d, &e.ReportingInstance, "reportingInstance")
		}
		return nil
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
	if len(source) > 0 && string(source) != "null" {
		if source[0] != '{' {
			return e, fmt.Errorf("source: %w", errNotObject)
		}
		if err := checkJSONText("source", source); err != nil {
			return e, err
		}
		e.Source = source
	}
	if k.needPolicy {
		if err := checkName("policyId", e.PolicyID); err != nil {
			return e, err
		}
		if e.PolicyID, err = checkUUID("policyId", e.PolicyID); err != nil {
			return e, err
		}
	}
	for _, f := range []struct{ name, v string }{
		{"eventNamespace", e.Namespace}, {"clusterName", e.Cluster}, {"compliance", e.Compliance},
		{"reason", e.Reason}, {"message", e.Message}, {"type", e.Type},
		{"reportingController", e.ReportingController}, {"reportingInstance", e.ReportingInstance},
	} {
		if err := checkText(f.name, f.v); err != nil {
			return e, err
		}
	}
	e.ClusterID, _ = canonicalUUID(clusterID)
	e.Compliance = ghComplianceState(e.Compliance).String()
	return e, nil
}

// ghComplianceState maps an event's compliance to local_status.
// compliance_type as upstream's GetDatabaseCompliance does
// (pkg/database/common/util.go): Compliant, NonCompliant, Pending, and
// anything else unknown.
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
	names, namespaces, created, counts, policies, clusters, clusterIDs, compliance,
	reasons, messages, types, controllers, instances, sources []string
}

// emptySource is what upstream stores as the source of an event that has
// none: json.Marshal of the zero corev1.EventSource.
const emptySource = `{}`

func eventColumnsOf(bundles []*bundle.Bundle) (*eventColumns, error) {
	c := &eventColumns{}
	for _, b := range bundles {
		p, err := payloadOf[GHEventsPayload](b)
		if err != nil {
			return nil, err
		}
		for _, e := range p.Events {
			source := emptySource
			if len(e.Source) > 0 {
				source = string(e.Source)
			}
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
			c.controllers = append(c.controllers, e.ReportingController)
			c.instances = append(c.instances, e.ReportingInstance)
			c.sources = append(c.sources, source)
		}
	}
	return c, nil
}

// Each event table is partitioned by month of created_at; every insert
// below follows, in its batch, the ensurePartitions of its rows' createdAt
// (and, for event.local_policies, of history.local_compliance, which its
// trigger writes). created_at is the agent's createdAt in UTC, as upstream
// stores the time.Time it decodes.
//
// An event without a usable clusterId (missing, empty, not a UUID) gets
// the cluster_id of the hub's live cluster of its clusterName in
// status.managed_clusters (the latest written, should there be several),
// the cluster the schema's triggers would give it; an event whose cluster
// is not known either is not inserted: cluster_id is NOT NULL, and
// upstream's insert of it fails its whole batch, which its manager
// retries for ever.
const ghEventClusterLookup = `
LEFT JOIN LATERAL (
	SELECT mc.cluster_id FROM status.managed_clusters AS mc
	WHERE s.cluster_id = '' AND mc.leaf_hub_name = $1 AND mc.cluster_name = s.cluster AND mc.deleted_at IS NULL
	ORDER BY mc.updated_at DESC LIMIT 1) AS m ON true
WHERE s.cluster_id <> '' OR m.cluster_id IS NOT NULL`

const (
	// insertGHClusterEventsSQL: managedcluster_event_handler.go, OnConflict
	// (leaf_hub_name, event_name, created_at) DoNothing, the hub being the
	// event's source (not the payload's leafHubName).
	insertGHClusterEventsSQL = `
INSERT INTO event.managed_clusters AS t
	(event_namespace, event_name, cluster_name, cluster_id, leaf_hub_name, message, reason,
	 reporting_controller, reporting_instance, event_type, created_at)
SELECT s.ns, s.name, s.cluster, coalesce(nullif(s.cluster_id, '')::uuid, m.cluster_id), $1, s.message, s.reason,
	s.controller, s.instance, s.type, (s.created::timestamptz AT TIME ZONE 'UTC')
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
	AS s(name, ns, created, cluster, cluster_id, message, reason, controller, instance, type)` + ghEventClusterLookup + `
ON CONFLICT (leaf_hub_name, event_name, created_at) DO NOTHING`

	// insertGHReplicatedEventsSQL: local_replicated_policy_event_handler.go,
	// OnConflict (event_name, count, created_at) DoNothing; compliance
	// through GetDatabaseCompliance; source the event's source object.
	insertGHReplicatedEventsSQL = `
INSERT INTO event.local_policies AS t
	(event_name, event_namespace, policy_id, cluster_id, cluster_name, leaf_hub_name, message, reason,
	 count, source, created_at, compliance)
SELECT s.name, s.ns, s.policy::uuid, coalesce(nullif(s.cluster_id, '')::uuid, m.cluster_id), s.cluster, $1, s.message, s.reason,
	s.count::integer, s.source::jsonb, (s.created::timestamptz AT TIME ZONE 'UTC'), s.compliance::local_status.compliance_type
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])
	AS s(name, ns, created, count, policy, cluster, cluster_id, compliance, message, reason, source)` + ghEventClusterLookup + `
ON CONFLICT (event_name, count, created_at) DO NOTHING`

	// insertGHRootEventsSQL: local_root_policy_event_handler.go. Upstream
	// does nothing on a conflict of (event_name, count, created_at) in
	// sendmode single (handleSingleEvent: DoNothing) but rewrites every
	// column in batch mode (UpdateAll). We do nothing in both: the key is
	// the event's identity (a Kubernetes event of that name, at that count
	// and time, is that event, and its columns cannot have changed), so a
	// replay or a resent batch writes nothing, as for every other event
	// type; and as the key has no hub, rewriting would let one hub take
	// over another hub's event row (its leaf_hub_name, its policy).
	insertGHRootEventsSQL = `
INSERT INTO event.local_root_policies AS t
	(event_name, event_namespace, policy_id, leaf_hub_name, message, reason, count, source, created_at, compliance)
SELECT s.name, s.ns, s.policy::uuid, $1, s.message, s.reason,
	s.count::integer, s.source::jsonb, (s.created::timestamptz AT TIME ZONE 'UTC'), s.compliance::local_status.compliance_type
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
	AS s(name, ns, created, count, policy, compliance, message, reason, source)
ON CONFLICT (event_name, count, created_at) DO NOTHING`
)

func planGHClusterEvents(bundles []*bundle.Bundle) (Write, error) {
	c, err := eventColumnsOf(bundles)
	if err != nil || len(c.names) == 0 {
		return Write{}, err
	}
	return Write{Statements: []Statement{
		ensurePartitions("event.managed_clusters", c.created),
		{What: "insert managed cluster events", SQL: insertGHClusterEventsSQL, Args: []any{
			bundles[0].Hub, c.names, c.namespaces, c.created, c.clusters, c.clusterIDs, c.messages, c.reasons,
			c.controllers, c.instances, c.types}},
	}}, nil
}

func planGHReplicatedPolicyEvents(bundles []*bundle.Bundle) (Write, error) {
	c, err := eventColumnsOf(bundles)
	if err != nil || len(c.names) == 0 {
		return Write{}, err
	}
	return Write{Statements: []Statement{
		ensurePartitions("event.local_policies", c.created),
		// The trigger of event.local_policies folds each event into its
		// day of history.local_compliance.
		ensurePartitions("history.local_compliance", c.created),
		{What: "insert replicated policy events", SQL: insertGHReplicatedEventsSQL, Args: []any{
			bundles[0].Hub, c.names, c.namespaces, c.created, c.counts, c.policies, c.clusters, c.clusterIDs,
			c.compliance, c.messages, c.reasons, c.sources}},
	}}, nil
}

func planGHRootPolicyEvents(bundles []*bundle.Bundle) (Write, error) {
	c, err := eventColumnsOf(bundles)
	if err != nil || len(c.names) == 0 {
		return Write{}, err
	}
	return Write{Statements: []Statement{
		ensurePartitions("event.local_root_policies", c.created),
		{What: "insert root policy events", SQL: insertGHRootEventsSQL, Args: []any{
			bundles[0].Hub, c.names, c.namespaces, c.created, c.counts, c.policies, c.compliance,
			c.messages, c.reasons, c.sources}},
	}}, nil
}
