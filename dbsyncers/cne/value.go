package cne

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

// ValueType is the type format of a value (value_type, v1 valueType), as
// redhat-cne/sdk-go pkg/event/event_data.go defines them.
type ValueType string

const (
	// Enumeration values are strings such as LOCKED, HOLDOVER, FREERUN.
	Enumeration ValueType = "enumeration"
	// Decimal values are decimal64.3 numbers, sent as a JSON number by
	// sdk-go's writer and as a string by others (rest-api examples).
	Decimal ValueType = "decimal64.3"
	// RedfishEvent values are Redfish event objects (hardware events).
	RedfishEvent ValueType = "redfish-event"
)

// AllValueTypes are the value types the family stores; any other is a
// dead letter, as sdk-go's reader refuses it ("value type … is not
// supported"). The CHECK of status.cne_state.value_type lists the same.
var AllValueTypes = []ValueType{Enumeration, Decimal, RedfishEvent}

func knownValueType(vt ValueType) bool {
	for _, t := range AllValueTypes {
		if vt == t {
			return true
		}
	}
	return false
}

// Errors of an event the family cannot store, each a dead letter (see
// errPayload for the reason they carry).
var (
	ErrMalformedData    = errors.New("data is not a JSON object {version, values}")
	ErrEmptyValues      = errors.New("values is empty")
	ErrNoAddress        = errors.New("value has no resource address (ResourceAddress or resource)")
	ErrNoNode           = errors.New("resource address names no node (no /cluster/node/<node>/ segment)")
	ErrMixedNodes       = errors.New("values name more than one node")
	ErrUnknownValueType = errors.New("unknown value_type")
	ErrMalformedValue   = errors.New("malformed value")
	ErrNoTime           = errors.New("event has no time: its values cannot be ordered")
	ErrTimeRange        = errors.New("event time is outside the years 1678-2262 (nanoseconds since 1970 in 64 bits)")
)

// Value is one value of an event, with what its row needs from the event.
type Value struct {
	// The key: CloudEvents type, resource address, data type.
	Type     string `json:"type"`
	Address  string `json:"address"`
	DataType string `json:"dataType"`

	Node      string    `json:"node"`
	ValueType ValueType `json:"valueType"`
	// Raw is the value as sent: a string, a number or an object.
	Raw json.RawMessage `json:"value"`
	// Text is an enumeration's text, or a decimal's text as sent (the
	// number literal, or the string's content); empty for Redfish events.
	Text string `json:"text,omitempty"`

	// The fence: CloudEvents time, then Kafka position, then the value's
	// place in its event (the later of two values of one key wins).
	TimeNS int64         `json:"timeNs"`
	Origin bundle.Origin `json:"origin"`
	Index  int           `json:"index"`

	// Of the event, stored with the row.
	ID          string `json:"id"`
	Source      string `json:"source"`
	DataVersion string `json:"dataVersion"`
}

// After reports whether v comes after w in the order of one key: a later
// CloudEvents time; at the same time, a later message of the same
// partition, or a later value of the same message. Values at the same time
// from different partitions are not ordered: the one written first stays.
// status.cne_state's upsert applies the same rule (but for Index: a write
// holds one value per key).
func (v *Value) After(w *Value) bool {
	if v.TimeNS != w.TimeNS {
		return v.TimeNS > w.TimeNS
	}
	if v.Origin.Topic != w.Origin.Topic || v.Origin.Partition != w.Origin.Partition {
		return false
	}
	if v.Origin.Offset != w.Origin.Offset {
		return v.Origin.Offset > w.Origin.Offset
	}
	return v.Index > w.Index
}

// Time returns v's CloudEvents time.
func (v *Value) Time() time.Time { return time.Unix(0, v.TimeNS).UTC() }

// key orders values by their key.
func compareKey(a, b *Value) int {
	if c := strings.Compare(a.Type, b.Type); c != 0 {
		return c
	}
	if c := strings.Compare(a.Address, b.Address); c != 0 {
		return c
	}
	return strings.Compare(a.DataType, b.DataType)
}

// Context is what a value needs of its event besides the data.
type Context struct {
	Type, ID, Source string
	Time             time.Time
	Origin           bundle.Origin
}

// wireValue is one element of values: both field-name sets (sdk-go v2
// pkg/event/event_data.go DataValue, whose reader "tolerant[s] older
// releases" in event_unmarshal.go readDataValue; v1 in the seed and in
// sdk-go v1 event_data.go).
type wireValue struct {
	ResourceAddress *string         `json:"ResourceAddress"`
	Resource        *string         `json:"resource"`
	DataTypeV3      *string         `json:"data_type"`
	DataTypeV1      *string         `json:"dataType"`
	ValueTypeV3     *string         `json:"value_type"`
	ValueTypeV1     *string         `json:"valueType"`
	Value           json.RawMessage `json:"value"`
}

type wireData struct {
	Version json.RawMessage   `json:"version"`
	Values  []json.RawMessage `json:"values"`
}

// Parse reads an event's data into its values, one per element of values
// in order, and returns the node they all name. Its errors are
// *dbsyncers.PermanentError: a dead letter with a reason.
func Parse(ctx Context, data []byte) ([]Value, string, error) {
	if ctx.Time.IsZero() {
		return nil, "", &dbsyncers.PermanentError{Reason: deadletter.MissingAttribute, Err: ErrNoTime}
	}
	if ctx.Time.Before(minTime) || ctx.Time.After(maxTime) {
		return nil, "", errPayload(fmt.Errorf("%w: %s", ErrTimeRange, ctx.Time.Format(time.RFC3339Nano)))
	}
	var d wireData
	if err := json.Unmarshal(data, &d); err != nil || !isObject(data) {
		if err == nil {
			err = errors.New("not an object")
		}
		return nil, "", errPayload(fmt.Errorf("%w: %v", ErrMalformedData, err))
	}
	if len(d.Values) == 0 {
		return nil, "", errPayload(ErrEmptyValues)
	}
	version := jsonText(d.Version)
	ns := ctx.Time.UnixNano()
	values := make([]Value, 0, len(d.Values))
	node := ""
	for i, raw := range d.Values {
		v, err := parseValue(raw)
		if err != nil {
			return nil, "", errPayload(fmt.Errorf("value %d: %w", i, err))
		}
		if node == "" {
			node = v.Node
		} else if v.Node != node {
			return nil, "", errPayload(fmt.Errorf("%w: value %d names %q, value 0 %q", ErrMixedNodes, i, v.Node, node))
		}
		v.Type, v.TimeNS, v.Origin, v.Index = ctx.Type, ns, ctx.Origin, i
		v.ID, v.Source, v.DataVersion = ctx.ID, ctx.Source, version
		values = append(values, v)
	}
	return values, node, nil
}

var (
	minTime = time.Unix(0, math.MinInt64).UTC().Add(time.Second)
	maxTime = time.Unix(0, math.MaxInt64).UTC().Add(-time.Second)
)

// errPayload is a bad_payload dead letter of err.
func errPayload(err error) error {
	return &dbsyncers.PermanentError{Reason: deadletter.BadPayload, Err: err}
}

func isObject(data []byte) bool {
	t := bytes.TrimSpace(data)
	return len(t) > 0 && t[0] == '{'
}

// jsonText returns a JSON string's content, or other JSON as it is.
func jsonText(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// either returns the one of a field's two names that is set; both set and
// different is an error.
func either(name string, v3, v1 *string) (string, error) {
	switch {
	case v3 != nil && v1 != nil && *v3 != *v1:
		return "", fmt.Errorf("%w: %s given twice, as %q and %q", ErrMalformedValue, name, *v3, *v1)
	case v3 != nil:
		return *v3, nil
	case v1 != nil:
		return *v1, nil
	}
	return "", nil
}

func parseValue(raw json.RawMessage) (Value, error) {
	var w wireValue
	if !isObject(raw) {
		return Value{}, fmt.Errorf("%w: not an object: %.40s", ErrMalformedValue, raw)
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return Value{}, fmt.Errorf("%w: %v", ErrMalformedValue, err)
	}
	addr, err := either("ResourceAddress/resource", w.ResourceAddress, w.Resource)
	if err != nil {
		return Value{}, err
	}
	if addr == "" {
		return Value{}, ErrNoAddress
	}
	node, ok := NodeOf(addr)
	if !ok {
		return Value{}, fmt.Errorf("%w: %q", ErrNoNode, addr)
	}
	dataType, err := either("data_type/dataType", w.DataTypeV3, w.DataTypeV1)
	if err != nil {
		return Value{}, err
	}
	if dataType == "" {
		return Value{}, fmt.Errorf("%w: no data_type (dataType)", ErrMalformedValue)
	}
	vt, err := either("value_type/valueType", w.ValueTypeV3, w.ValueTypeV1)
	if err != nil {
		return Value{}, err
	}
	if !knownValueType(ValueType(vt)) {
		return Value{}, fmt.Errorf("%w %q (want one of %v)", ErrUnknownValueType, vt, AllValueTypes)
	}
	v := Value{Address: addr, DataType: dataType, Node: node, ValueType: ValueType(vt)}
	v.Raw = append(json.RawMessage(nil), bytes.TrimSpace(w.Value)...)
	if v.Text, err = checkValue(v.ValueType, v.Raw); err != nil {
		return Value{}, err
	}
	return v, nil
}

// decimalText is the text of a decimal number PostgreSQL's numeric reads
// exactly as written: no hexadecimal, no underscores, no NaN or Infinity.
var decimalText = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// checkValue checks a value against its type and returns its text.
func checkValue(vt ValueType, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", fmt.Errorf("%w: no value", ErrMalformedValue)
	}
	switch vt {
	case Enumeration:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s == "" {
			return "", fmt.Errorf("%w: an enumeration is a non-empty string, not %.40s", ErrMalformedValue, raw)
		}
		return s, nil
	case Decimal:
		text := string(raw)
		if raw[0] == '"' {
			if err := json.Unmarshal(raw, &text); err != nil {
				return "", fmt.Errorf("%w: %v", ErrMalformedValue, err)
			}
		}
		f, err := strconv.ParseFloat(text, 64)
		if !decimalText.MatchString(text) || err != nil || math.IsInf(f, 0) {
			return "", fmt.Errorf("%w: %q is not a decimal64.3 number", ErrMalformedValue, text)
		}
		return text, nil
	case RedfishEvent:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return "", fmt.Errorf("%w: a redfish-event is an object, not %.40s", ErrMalformedValue, raw)
		}
		return "", nil
	}
	return "", fmt.Errorf("%w %q", ErrUnknownValueType, vt)
}

// nodeSegment precedes the node's name in a resource address: upstream's
// publisher joins its resource prefix "/cluster/node", the node and the
// resource (cloud-event-proxy plugins/ptp_operator/metrics/manager.go).
const nodeSegment = "/cluster/node/"

// NodeOf returns the node a resource address names: the path segment after
// /cluster/node/.
func NodeOf(addr string) (string, bool) {
	i := strings.Index(addr, nodeSegment)
	if i < 0 {
		return "", false
	}
	node, _, _ := strings.Cut(addr[i+len(nodeSegment):], "/")
	return node, node != ""
}
