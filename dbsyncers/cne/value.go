package cne

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/jsonscan"
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
// supported"). The CHECK of stb.cne_state.value_type lists the same.
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
	ErrNotStorable      = errors.New("holds U+0000 or invalid UTF-8, which PostgreSQL text and jsonb cannot store")
	ErrKeyTooLong       = fmt.Errorf("type, address and data type are longer than %d bytes together, more than stb.cne_state's key index takes", MaxKeyBytes)
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
// partition, or a later value of the same message. The order must be total
// (a node's events are folded in a job, and merged in a unit, before the
// database compares them with what it holds), so values at the same time
// from different partitions, which Kafka does not order, are ordered by
// topic (bytewise) and partition: arbitrary, but the same whichever was
// read first. (With partial order a value that the stored row beats could
// hide, in a fold, a later one of the stored row's partition:
// TestModelRandomGroups.) stb.cne_state's upsert applies the same rule
// but for Index (a write holds one value per key).
func (v *Value) After(w *Value) bool {
	switch {
	case v.TimeNS != w.TimeNS:
		return v.TimeNS > w.TimeNS
	case v.Origin.Topic != w.Origin.Topic:
		return v.Origin.Topic > w.Origin.Topic
	case v.Origin.Partition != w.Origin.Partition:
		return v.Origin.Partition > w.Origin.Partition
	case v.Origin.Offset != w.Origin.Offset:
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

// Parse reads an event's data into its values, one per element of values
// in order, and returns the node they all name. Its errors are
// *dbsyncers.PermanentError: a dead letter with a reason; with a bad value
// it still returns the node the values before it named, if any.
//
// Member names are matched exactly, as sdk-go's reader matches them
// (pkg/event/event_unmarshal.go readDataValue): the O-RAN v3 names
// ResourceAddress, data_type, value_type of sdk-go v2's DataValue
// (pkg/event/event_data.go) and the v1 names resource, dataType, valueType
// its reader still takes ("tolerant older releases"), as the seed and
// sdk-go v1 write them. The data is read in one pass (jsonscan); each
// value is then checked from the bytes it was sent as.
func Parse(ctx Context, data []byte) ([]Value, string, error) {
	if ctx.Time.IsZero() {
		return nil, "", &dbsyncers.PermanentError{Reason: deadletter.MissingAttribute, Err: ErrNoTime}
	}
	if ctx.Time.Before(minTime) || ctx.Time.After(maxTime) {
		return nil, "", errPayload(fmt.Errorf("%w: %s", ErrTimeRange, ctx.Time.Format(time.RFC3339Nano)))
	}
	if !isObject(data) {
		return nil, "", errPayload(fmt.Errorf("%w: not an object", ErrMalformedData))
	}
	var (
		version string
		values  []Value
		node    string
		bad     error // the first bad value's; the rest is still read, for syntax
	)
	d := jsonscan.NewDecoder(data)
	err := d.Object(func(name []byte) error {
		switch string(name) {
		case "version":
			raw, err := d.Raw()
			version = jsonText(raw)
			return err
		case "values":
			return d.Array(func() error {
				raw, err := d.Raw()
				if err != nil || bad != nil {
					return err
				}
				i := len(values)
				v, err := parseValue(raw)
				switch {
				case err != nil:
					bad = fmt.Errorf("value %d: %w", i, err)
				case node != "" && v.Node != node:
					bad = fmt.Errorf("%w: value %d names %q, value 0 %q", ErrMixedNodes, i, v.Node, node)
				default:
					node = v.Node
					values = append(values, v)
				}
				return nil
			})
		}
		return nil
	})
	if err == nil {
		err = d.Done()
	}
	if err != nil {
		return nil, "", errPayload(fmt.Errorf("%w: %v", ErrMalformedData, err))
	}
	if bad != nil {
		return nil, node, errPayload(bad) // the node of the values before the bad one, if any
	}
	if len(values) == 0 {
		return nil, "", errPayload(ErrEmptyValues)
	}
	// What is stored beside the values: a string PostgreSQL refuses would
	// fail the write of every event of the node's job, not this one's. So
	// would a key too long for its index.
	for i := range values {
		if n := len(ctx.Type) + len(values[i].Address) + len(values[i].DataType); n > MaxKeyBytes {
			return nil, node, errPayload(fmt.Errorf("value %d: %w (%d)", i, ErrKeyTooLong, n))
		}
	}
	for _, attr := range [...]struct{ name, s string }{{"type", ctx.Type}, {"id", ctx.ID}, {"source", ctx.Source}, {"version", version}} {
		if !storable(attr.s) {
			return nil, node, errPayload(fmt.Errorf("%s %.40q %w", attr.name, attr.s, ErrNotStorable))
		}
	}
	ns := ctx.Time.UnixNano()
	for i := range values {
		v := &values[i]
		v.Type, v.TimeNS, v.Origin, v.Index = ctx.Type, ns, ctx.Origin, i
		v.ID, v.Source, v.DataVersion = ctx.ID, ctx.Source, version
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
func jsonText(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		if s, ok, err := jsonscan.NewDecoder(raw).String(); ok && err == nil {
			return s
		}
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// field is a member of a value that has two names.
type field struct {
	v3, v1 string // the names
	val    string
	set    string // the name it was read under, "" if none
}

// read reads the field's string under name; the other name given too,
// with another value, is an error.
func (f *field) read(d *jsonscan.Decoder, name string) error {
	s, ok, err := d.String()
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformedValue, name, err)
	}
	if !ok {
		return nil // null: not given
	}
	if f.set != "" && f.val != s {
		return fmt.Errorf("%w: given twice, as %s %q and %s %q", ErrMalformedValue, f.set, f.val, name, s)
	}
	f.val, f.set = s, name
	return nil
}

// parseValue reads one element of values.
func parseValue(raw []byte) (Value, error) {
	if !isObject(raw) {
		return Value{}, fmt.Errorf("%w: not an object: %.40s", ErrMalformedValue, raw)
	}
	addr := field{v3: "ResourceAddress", v1: "resource"}
	dataType := field{v3: "data_type", v1: "dataType"}
	valueType := field{v3: "value_type", v1: "valueType"}
	var value []byte
	d := jsonscan.NewDecoder(raw)
	err := d.Object(func(name []byte) error {
		for _, f := range [...]*field{&addr, &dataType, &valueType} {
			if string(name) == f.v3 || string(name) == f.v1 {
				return f.read(d, string(name))
			}
		}
		if string(name) == "value" {
			var err error
			value, err = d.Raw()
			return err
		}
		return nil
	})
	if err != nil {
		return Value{}, err
	}
	if addr.val == "" {
		return Value{}, ErrNoAddress
	}
	node, ok := NodeOf(addr.val)
	if !ok {
		return Value{}, fmt.Errorf("%w: %q", ErrNoNode, addr.val)
	}
	if dataType.val == "" {
		return Value{}, fmt.Errorf("%w: no data_type (dataType)", ErrMalformedValue)
	}
	if !knownValueType(ValueType(valueType.val)) {
		return Value{}, fmt.Errorf("%w %q (want one of %v)", ErrUnknownValueType, valueType.val, AllValueTypes)
	}
	v := Value{Address: addr.val, DataType: dataType.val, Node: node, ValueType: ValueType(valueType.val)}
	v.Raw = append(json.RawMessage(nil), value...)
	if v.Text, err = checkValue(v.ValueType, v.Raw); err != nil {
		return Value{}, err
	}
	if !storable(v.Address) || !storable(v.DataType) || !storable(v.Text) || !storableJSON(v.Raw) {
		return Value{}, fmt.Errorf("%w: %w", ErrMalformedValue, ErrNotStorable)
	}
	return v, nil
}

// MaxKeyBytes bounds a row's key (type, address, data type): a btree
// index entry must fit in a third of a page (2,704 bytes with 8 KiB pages;
// PostgreSQL refuses the row with program_limit_exceeded otherwise), and
// the upstream addresses are a few dozen bytes.
const MaxKeyBytes = 2048

// storable reports whether PostgreSQL can store s as text: valid UTF-8
// without NUL.
func storable(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// storableJSON reports whether PostgreSQL can store raw, valid JSON, as
// jsonb: valid UTF-8 (JSON readers as lenient as encoding/json let invalid
// bytes inside strings through) without a \u0000 escape, which jsonb
// refuses. A \u0000 is an escape when an even number of backslashes
// precedes its own.
func storableJSON(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	for i := 0; ; {
		j := bytes.Index(raw[i:], []byte(`\u0000`))
		if j < 0 {
			return true
		}
		j += i
		n := 0
		for k := j - 1; k >= 0 && raw[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return false
		}
		i = j + 1
	}
}

// maxDecimalBytes and maxExponent bound a decimal's text: PostgreSQL's
// numeric refuses a scale above 16,383 ("1e-20000" overflows it, where
// strconv.ParseFloat reads 0), and upstream's decimals are offsets and
// clock classes of a few digits.
const (
	maxDecimalBytes = 64
	maxExponent     = 1000
)

// isDecimal reports whether s is a decimal number PostgreSQL's numeric
// reads exactly as written: [+-]digits[.digits][e[+-]digits], digits on at
// least one side of the point, at most maxDecimalBytes long with an
// exponent of at most maxExponent; no hexadecimal, no underscores, no NaN
// or Infinity (which strconv.ParseFloat would take).
func isDecimal(s string) bool {
	if len(s) > maxDecimalBytes {
		return false
	}
	digits := func(i int) (int, int) {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, n = i+1, n+1
		}
		return i, n
	}
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	i, n := digits(i)
	if i < len(s) && s[i] == '.' {
		var m int
		i, m = digits(i + 1)
		n += m
	}
	if n == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		from := i
		if i, n = digits(i); n == 0 {
			return false
		}
		if e, err := strconv.Atoi(s[from:i]); err != nil || e > maxExponent {
			return false
		}
	}
	return i == len(s)
}

// checkValue checks a value, valid JSON, against its type and returns
// its text.
func checkValue(vt ValueType, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", fmt.Errorf("%w: no value", ErrMalformedValue)
	}
	str := func() (string, bool) {
		if raw[0] != '"' {
			return "", false
		}
		s, ok, err := jsonscan.NewDecoder(raw).String()
		return s, ok && err == nil
	}
	switch vt {
	case Enumeration:
		s, ok := str()
		if !ok || s == "" {
			return "", fmt.Errorf("%w: an enumeration is a non-empty string, not %.40s", ErrMalformedValue, raw)
		}
		return s, nil
	case Decimal:
		text, ok := str()
		if !ok {
			text = string(raw)
		}
		f, err := strconv.ParseFloat(text, 64)
		if !isDecimal(text) || err != nil || math.IsInf(f, 0) {
			return "", fmt.Errorf("%w: %.40q is not a decimal64.3 number", ErrMalformedValue, text)
		}
		return text, nil
	case RedfishEvent:
		if raw[0] != '{' {
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
