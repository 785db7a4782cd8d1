package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ghEventEmitter is the agent's EventEmitter of one event type
// (agent/pkg/status/emitters/event_emitter.go, newest text id
// 17041734785): the events seen since the last tick wait in pending and
// go out at the tick, in batch mode as one CloudEvent whose data is their
// array (a batch that would grow past the frame limit is sent first, as
// it is), in single mode each as a CloudEvent of its own whose data is the
// event object, all at the emitter's version as it stands. Each Update
// increments the value; each tick moves to the next generation, whether
// or not anything was sent.
type ghEventEmitter struct {
	single  bool
	limit   int
	version ghVersion
	pending [][]byte
	size    int // of the pending batch's JSON array
	// sent are the CloudEvents sent since the caller last took them.
	sent []ghEventData
}

// ghEventData is one CloudEvent an event emitter sends.
type ghEventData struct {
	data    []byte
	version ghVersion
}

// mode is the sendmode extension the emitter sets
// (constants.CloudEventExtensionSendMode).
func (e *ghEventEmitter) mode() string {
	if e.single {
		return SendModeSingle
	}
	return SendModeBatch
}

// add is addEvent: in batch mode a batch that would grow past the limit
// is sent first, without moving to the next generation.
func (e *ghEventEmitter) add(ev []byte) {
	if !e.single && len(e.pending) > 0 && e.size+1+len(ev) > e.limit {
		e.sendEvents()
	}
	if len(e.pending) == 0 {
		e.size = len(`[]`)
	} else {
		e.size++ // the comma
	}
	e.size += len(ev)
	e.pending = append(e.pending, ev)
}

// update is EventEmitter.Update of one object: its events, then one
// increment.
func (e *ghEventEmitter) update(evs ...[]byte) {
	for _, ev := range evs {
		e.add(ev)
	}
	e.version.incr()
}

// resync is EventEmitter.Resync: the events still there are sent again at
// once, at the version as it stands (no increment, no next generation).
// The agent does it when it starts, with an empty time filter, so a
// restarted agent sends again the events its run before already sent.
func (e *ghEventEmitter) resync(evs [][]byte) {
	for _, ev := range evs {
		e.add(ev)
	}
	e.sendEvents()
}

// sendEvents sends what waits.
func (e *ghEventEmitter) sendEvents() {
	if len(e.pending) == 0 {
		return
	}
	if e.single {
		for _, ev := range e.pending {
			e.sent = append(e.sent, ghEventData{data: ev, version: e.version})
		}
	} else {
		data := make([]byte, 0, e.size)
		data = append(data, '[')
		data = append(data, bytes.Join(e.pending, []byte{','})...)
		data = append(data, ']')
		e.sent = append(e.sent, ghEventData{data: data, version: e.version})
	}
	e.pending, e.size = nil, 0
}

// send is EventEmitter.Send, at every tick.
func (e *ghEventEmitter) send() {
	e.sendEvents()
	e.version.next()
}

// take returns the CloudEvents sent since the last call.
func (e *ghEventEmitter) take() []ghEventData {
	s := e.sent
	e.sent = nil
	return s
}

// The event objects, as the agent's transforms fill them.
type (
	// ghClusterEvent is models.ManagedClusterEvent
	// (pkg/database/models/event.go @f0cf16c; transform in
	// agent/pkg/status/syncers/events/managedcluster_event_emitter.go
	// @99a29a38): no key is ever left out, and the Kubernetes event type
	// is "type".
	ghClusterEvent struct {
		EventNamespace      string `json:"eventNamespace"`
		EventName           string `json:"eventName"`
		ClusterName         string `json:"clusterName"`
		ClusterID           string `json:"clusterId"`
		LeafHubName         string `json:"leafHubName"`
		Message             string `json:"message"`
		Reason              string `json:"reason"`
		ReportingController string `json:"reportingController"`
		ReportingInstance   string `json:"reportingInstance"`
		EventType           string `json:"type"`
		CreatedAt           string `json:"createdAt"`
	}
	// ghEventSource is corev1.EventSource: both keys omitempty.
	ghEventSource struct {
		Component string `json:"component,omitempty"`
		Host      string `json:"host,omitempty"`
	}
	// ghBaseEvent is event.BaseEvent (pkg/bundle/event/base_event.go
	// @3f54748f); source and createdAt are structs, whose omitempty has
	// no effect.
	ghBaseEvent struct {
		EventName      string        `json:"eventName"`
		EventNamespace string        `json:"eventNamespace"`
		Message        string        `json:"message,omitempty"`
		Reason         string        `json:"reason,omitempty"`
		Count          int32         `json:"count,omitempty"`
		Source         ghEventSource `json:"source"`
		CreatedAt      string        `json:"createdAt"`
	}
	// ghRootPolicyEvent is event.RootPolicyEvent
	// (pkg/bundle/event/policy_event_bundle.go @eeca7bbb; transform in
	// local_root_policy_event_emitter.go @c55bbe60): no cluster.
	ghRootPolicyEvent struct {
		ghBaseEvent
		PolicyID   string `json:"policyId"`
		Compliance string `json:"compliance"`
	}
	// ghReplicatedPolicyEvent is event.ReplicatedPolicyEvent, made from
	// the status history of a replicated policy
	// (agent/pkg/status/syncers/policies/replicated_policy_event_emitter.go
	// @acfdb2a1).
	ghReplicatedPolicyEvent struct {
		ghBaseEvent
		PolicyID    string `json:"policyId"`
		ClusterID   string `json:"clusterId"`
		ClusterName string `json:"clusterName"`
		Compliance  string `json:"compliance"`
	}
	// ghCGUEvent is models.ClusterGroupUpgradeEvent (@f0cf16c; transform
	// in clustergroupupgrade_event_emitter.go @fbbe79e2). The manager has
	// no handler for it.
	ghCGUEvent struct {
		EventNamespace      string            `json:"eventNamespace"`
		EventName           string            `json:"eventName"`
		EventAnnotations    map[string]string `json:"eventAnnotations,omitempty"`
		CGUName             string            `json:"cguName"`
		LeafHubName         string            `json:"leafHubName"`
		Message             string            `json:"message"`
		Reason              string            `json:"reason"`
		ReportingController string            `json:"reportingController"`
		ReportingInstance   string            `json:"reportingInstance"`
		EventType           string            `json:"type"`
		CreatedAt           string            `json:"createdAt"`
	}
)

// encodeEvent returns ev's JSON.
func encodeEvent(ev any) ([]byte, error) {
	data, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode event %T: %w", ev, err)
	}
	return data, nil
}
