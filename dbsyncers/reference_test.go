package dbsyncers

// The decoders as they were first written, with encoding/json, kept as the
// reference the scanning decoders are checked against (FuzzDecodersAgainstReference)
// and measured against (BenchmarkDecodeMix).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// refDecodeObjects decodes the data every status bundle carries: a JSON object
// whose "objects" member lists the bundle's items. It returns the items
// undecoded, so each type decodes only what it needs and keeps the rest as
// it came. "objects": null counts as an empty list (a Go agent marshals a
// nil slice so); other members are ignored, so agents may add some.
//
// A missing "objects" member is an error when required: for a complete
// bundle an empty list deletes the hub's rows, and that must be said, not
// inferred from a truncated or mistyped payload.
func refDecodeObjects(data []byte, required bool) ([]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	if top == nil {
		return nil, errors.New("payload: want a JSON object, got null")
	}
	raw, ok := top["objects"]
	if !ok {
		if required {
			return nil, errors.New(`payload: "objects" is missing`)
		}
		return nil, nil
	}
	var objects []json.RawMessage
	if err := json.Unmarshal(raw, &objects); err != nil {
		return nil, fmt.Errorf(`payload: "objects": %w`, err)
	}
	return objects, nil
}

// refDecodeHeartbeat accepts {} and {"objects":[...]}, the two forms agents
// send; the objects, if any, are ignored.
func refDecodeHeartbeat(data []byte) (any, error) {
	if _, err := refDecodeObjects(data, false); err != nil {
		return nil, fmt.Errorf("heartbeat %w", err)
	}
	return &HeartbeatPayload{}, nil
}

// refDecodeManagedClusters reads {"objects":[<ManagedCluster>...]}. Each object
// must have a non-empty metadata.name, the row's key; everything else is
// kept as raw JSON for the payload column, so fields the bridge does not
// know survive. The result is normalised (sorted, one per name) here, in
// the reader, so that workers holding a connection do not have to.
func refDecodeManagedClusters(data []byte) (any, error) {
	objects, err := refDecodeObjects(data, true)
	if err != nil {
		return nil, fmt.Errorf("managedclusters %w", err)
	}
	clusters := make([]ManagedCluster, len(objects))
	for i, obj := range objects {
		var meta struct {
			Metadata struct {
				Name string `json:"name"`
				UID  string `json:"uid"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(obj, &meta); err != nil {
			return nil, fmt.Errorf("managedclusters payload: object %d: %w", i, err)
		}
		if err := refCheckName(fmt.Sprintf("managedclusters payload: object %d: metadata.name", i), meta.Metadata.Name); err != nil {
			return nil, err
		}
		if err := refCheckText(fmt.Sprintf("managedclusters payload: object %d: metadata.uid", i), meta.Metadata.UID); err != nil {
			return nil, err
		}
		clusters[i] = ManagedCluster{Name: meta.Metadata.Name, UID: meta.Metadata.UID, Object: obj}
	}
	return &ManagedClustersPayload{Clusters: normalize(clusters)}, nil
}

// refDecodeClustersPolicies reads {"objects":[{"policyId","clusters":[...],
// "remediationAction","resourceVersion"}...]}. A policy listed twice is
// taken from its last object, as a later entry of a snapshot is the later
// state; a cluster listed twice for one policy counts once.
func refDecodeClustersPolicies(data []byte) (any, error) {
	objects, err := refDecodeObjects(data, true)
	if err != nil {
		return nil, fmt.Errorf("clusterspolicies %w", err)
	}
	policies := make([]PolicyClusters, len(objects))
	for i, obj := range objects {
		var o struct {
			PolicyID          string   `json:"policyId"`
			Clusters          []string `json:"clusters"`
			RemediationAction string   `json:"remediationAction"`
			ResourceVersion   string   `json:"resourceVersion"`
		}
		if err := json.Unmarshal(obj, &o); err != nil {
			return nil, fmt.Errorf("clusterspolicies payload: object %d: %w", i, err)
		}
		if err := refCheckName("policyId", o.PolicyID); err != nil {
			return nil, fmt.Errorf("clusterspolicies payload: object %d: %w", i, err)
		}
		if o.Clusters == nil {
			return nil, fmt.Errorf("clusterspolicies payload: object %d (policy %q): clusters is missing or null", i, o.PolicyID)
		}
		if err := refCheckNames("clusters", o.Clusters); err != nil {
			return nil, fmt.Errorf("clusterspolicies payload: object %d (policy %q): %w", i, o.PolicyID, err)
		}
		policies[i] = PolicyClusters{PolicyID: o.PolicyID, Clusters: refSet(o.Clusters)}
	}
	return &ClustersPoliciesPayload{Policies: refLastPerID(policies, func(p PolicyClusters) string { return p.PolicyID })}, nil
}

// refDecodeCompliance reads {"objects":[{"policyId","nonCompliantClusters":
// [...],"unknownComplianceClusters":[...],"resourceVersion"}...]}.
//
// A cluster listed both as non-compliant and as unknown is non-compliant:
// the hub saw it fail, which is the state an operator must not miss. A
// policy listed twice is taken from its last object.
func refDecodeCompliance(data []byte) (any, error) {
	objects, err := refDecodeObjects(data, true)
	if err != nil {
		return nil, fmt.Errorf("compliance %w", err)
	}
	policies := make([]PolicyCompliance, len(objects))
	for i, obj := range objects {
		var o struct {
			PolicyID        string   `json:"policyId"`
			NonCompliant    []string `json:"nonCompliantClusters"`
			Unknown         []string `json:"unknownComplianceClusters"`
			ResourceVersion string   `json:"resourceVersion"`
		}
		if err := json.Unmarshal(obj, &o); err != nil {
			return nil, fmt.Errorf("compliance payload: object %d: %w", i, err)
		}
		if err := refCheckName("policyId", o.PolicyID); err != nil {
			return nil, fmt.Errorf("compliance payload: object %d: %w", i, err)
		}
		if err := refCheckNames("nonCompliantClusters", o.NonCompliant); err != nil {
			return nil, fmt.Errorf("compliance payload: object %d (policy %q): %w", i, o.PolicyID, err)
		}
		if err := refCheckNames("unknownComplianceClusters", o.Unknown); err != nil {
			return nil, fmt.Errorf("compliance payload: object %d (policy %q): %w", i, o.PolicyID, err)
		}
		nc := refSet(o.NonCompliant)
		policies[i] = PolicyCompliance{PolicyID: o.PolicyID, NonCompliant: nc, Unknown: refMinus(refSet(o.Unknown), nc)}
	}
	return &CompliancePayload{Policies: refLastPerID(policies, func(p PolicyCompliance) string { return p.PolicyID })}, nil
}

// refDecodeComplianceDelta reads {"objects":[{"policyId","compliantClusters":
// [...],"nonCompliantClusters":[...],"unknownComplianceClusters":[...]}...]}.
// Within one delta a pair listed by a later object takes that object's
// state; one listed twice by the same object takes the worse state.
func refDecodeComplianceDelta(data []byte) (any, error) {
	objects, err := refDecodeObjects(data, true)
	if err != nil {
		return nil, fmt.Errorf("compliancedelta %w", err)
	}
	type ranked struct {
		ComplianceChange
		rank int // object index, then severity: the highest wins
	}
	var changes []ranked
	for i, obj := range objects {
		var o struct {
			PolicyID     string   `json:"policyId"`
			Compliant    []string `json:"compliantClusters"`
			NonCompliant []string `json:"nonCompliantClusters"`
			Unknown      []string `json:"unknownComplianceClusters"`
		}
		if err := json.Unmarshal(obj, &o); err != nil {
			return nil, fmt.Errorf("compliancedelta payload: object %d: %w", i, err)
		}
		if err := refCheckName("policyId", o.PolicyID); err != nil {
			return nil, fmt.Errorf("compliancedelta payload: object %d: %w", i, err)
		}
		for _, l := range []struct {
			field string
			names []string
			state ComplianceState
		}{
			{"compliantClusters", o.Compliant, Compliant},
			{"nonCompliantClusters", o.NonCompliant, NonCompliant},
			{"unknownComplianceClusters", o.Unknown, UnknownCompliance},
		} {
			if err := refCheckNames(l.field, l.names); err != nil {
				return nil, fmt.Errorf("compliancedelta payload: object %d (policy %q): %w", i, o.PolicyID, err)
			}
			for _, c := range l.names {
				changes = append(changes, ranked{ComplianceChange{o.PolicyID, c, l.state}, 4*i + severity(l.state)})
			}
		}
	}
	// The highest rank of each pair wins; then the pairs in key order.
	type pair struct{ policy, cluster string }
	best := map[pair]ranked{}
	for _, c := range changes {
		k := pair{c.PolicyID, c.Cluster}
		if b, ok := best[k]; !ok || c.rank > b.rank {
			best[k] = c
		}
	}
	out := make([]ComplianceChange, 0, len(best))
	for _, c := range best {
		out = append(out, c.ComplianceChange)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].PolicyID != out[j].PolicyID {
			return out[i].PolicyID < out[j].PolicyID
		}
		return out[i].Cluster < out[j].Cluster
	})
	return &ComplianceDeltaPayload{Changes: out}, nil
}

// refDecodePolicyEvents reads {"objects":[{"policyId","clusterName",
// "eventName","reason","message","time"}...]}. policyId, clusterName and
// eventName identify the event and are required; time, when given and not
// empty, is RFC 3339.
func refDecodePolicyEvents(data []byte) (any, error) {
	objects, err := refDecodeObjects(data, true)
	if err != nil {
		return nil, fmt.Errorf("policyevents %w", err)
	}
	events := make([]PolicyEvent, len(objects))
	for i, obj := range objects {
		var o struct {
			PolicyID    string `json:"policyId"`
			ClusterName string `json:"clusterName"`
			EventName   string `json:"eventName"`
			Reason      string `json:"reason"`
			Message     string `json:"message"`
			Time        string `json:"time"`
		}
		if err := json.Unmarshal(obj, &o); err != nil {
			return nil, fmt.Errorf("policyevents payload: object %d: %w", i, err)
		}
		e := PolicyEvent{PolicyID: o.PolicyID, ClusterName: o.ClusterName, EventName: o.EventName, Reason: o.Reason, Message: o.Message}
		if err := checkEvent(e); err != nil {
			return nil, fmt.Errorf("policyevents payload: object %d: %w", i, err)
		}
		if o.Time != "" {
			if e.Time, err = time.Parse(time.RFC3339, o.Time); err != nil {
				return nil, fmt.Errorf("policyevents payload: object %d: time: %w", i, err)
			}
		}
		events[i] = e
	}
	return &PolicyEventsPayload{Events: firstPerEvent(events)}, nil
}

// knownFields are the member names the decoders read.
var knownFields = []string{"objects", "metadata", "name", "uid", "policyId", "clusters", "remediationAction",
	"resourceVersion", "nonCompliantClusters", "unknownComplianceClusters", "compliantClusters",
	"clusterName", "eventName", "reason", "message", "time"}

// ambiguousNames reports whether an object in data names a member the
// decoders read twice, or in other letter case. There the reference and
// the scanning decoders differ by design: encoding/json matches struct
// fields in any case and merges a repeated member into what it already
// decoded, while the scanning decoders match names exactly and take the
// last value.
func ambiguousNames(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object, wantName bool
		seen             map[string]bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false // the end, or invalid JSON that both reject
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.object && top.wantName {
			name := tok.(string)
			for _, f := range knownFields {
				if strings.EqualFold(name, f) && (name != f || top.seen[f]) {
					return true
				}
				if name == f {
					top.seen[f] = true
				}
			}
			top.wantName = false
			continue
		}
		if top != nil && top.object {
			top.wantName = true
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, &frame{object: d == '{', wantName: d == '{', seen: map[string]bool{}})
		}
	}
}

// FuzzDecodersAgainstReference: every decoder accepts what its encoding/json
// reference accepts and decodes it to the same payload, but where member
// names are ambiguous (see ambiguousNames).
func FuzzDecodersAgainstReference(f *testing.F) {
	for _, c := range decodeClusterCases {
		f.Add([]byte(c.data))
	}
	for _, c := range decodePlacementCases {
		f.Add([]byte(c.data))
	}
	for _, c := range decodeComplianceCases {
		f.Add([]byte(c.data))
	}
	for _, c := range decodeDeltaCases {
		f.Add([]byte(c.data))
	}
	for _, c := range decodeEventsCases {
		f.Add([]byte(c.data))
	}
	f.Add([]byte(`{"objects":[{"metadata":{"name":"a","uid":"\u00e9\ud83d\ude00"},"spec":{"x":[1,2.5e3,true,null]}}]}`))
	f.Add([]byte(`{"objects":[{"policyId":"p","clusters":["b","a","b"],"nonCompliantClusters":["a"],"compliantClusters":["c"]}]}`))
	decoders := []struct {
		name     string
		new, ref func([]byte) (any, error)
	}{
		{"heartbeat", decodeHeartbeat, refDecodeHeartbeat},
		{"managedclusters", decodeManagedClusters, refDecodeManagedClusters},
		{"clusterspolicies", decodeClustersPolicies, refDecodeClustersPolicies},
		{"compliance", decodeCompliance, refDecodeCompliance},
		{"compliancedelta", decodeComplianceDelta, refDecodeComplianceDelta},
		{"policyevents", decodePolicyEvents, refDecodePolicyEvents},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if ambiguousNames(data) {
			t.Skip("ambiguous member names")
		}
		for _, d := range decoders {
			got, err := d.new(data)
			want, wantErr := d.ref(data)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("%s(%q): error %v, reference error %v", d.name, data, err, wantErr)
			}
			if err == nil && !samePayload(reflect.ValueOf(got), reflect.ValueOf(want)) {
				t.Fatalf("%s(%q) = %+v, reference %+v", d.name, data, got, want)
			}
		}
	})
}

// The reference's own normalisation, written apart from the production
// helpers (sortedSet, without, lastPerPolicy, checkName, compareChange)
// so that the differential fuzz test catches a bug in those too.

// refMaxNameBytes is the documented limit on names (MaxNameBytes).
const refMaxNameBytes = 512

func refCheckText(field, s string) error {
	if strings.ContainsRune(s, 0) {
		return fmt.Errorf("%s holds a NUL character", field)
	}
	return nil
}

func refCheckName(field, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s is missing or empty", field)
	case len(s) > refMaxNameBytes:
		return fmt.Errorf("%s is longer than %d bytes", field, refMaxNameBytes)
	}
	return refCheckText(field, s)
}

func refCheckNames(field string, names []string) error {
	for i, s := range names {
		if err := refCheckName(fmt.Sprintf("%s[%d]", field, i), s); err != nil {
			return err
		}
	}
	return nil
}

// refSet returns the distinct names in ascending order, as a new slice;
// never nil.
func refSet(names []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// refMinus returns the names of a that are not in b.
func refMinus(a, b []string) []string {
	drop := map[string]bool{}
	for _, n := range b {
		drop[n] = true
	}
	out := []string{}
	for _, n := range a {
		if !drop[n] {
			out = append(out, n)
		}
	}
	return out
}

// refLastPerID keeps, per id, the last element with it, in id order.
func refLastPerID[T any](items []T, id func(T) string) []T {
	last := map[string]T{}
	for _, it := range items {
		last[id(it)] = it
	}
	ids := make([]string, 0, len(last))
	for k := range last {
		ids = append(ids, k)
	}
	sort.Strings(ids)
	out := make([]T, 0, len(ids))
	for _, k := range ids {
		out = append(out, last[k])
	}
	return out
}

// samePayload is reflect.DeepEqual but for slices, where nil and empty are
// the same: the reference builds its lists apart from production and need
// not allocate the same way.
func samePayload(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return samePayload(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !samePayload(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !samePayload(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if !samePayload(a.MapIndex(k), b.MapIndex(k)) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
