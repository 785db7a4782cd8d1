package cne_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/transport"
)

// Test data is shaped as upstream shapes it:
//
//   - redhat-cne/cloud-event-proxy plugins/ptp_operator/metrics/manager.go
//     GetPTPEventsData: a PTP event's values are a notification
//     (enumeration, the state) and a metric (decimal64.3, the offset, an
//     int64 written as a JSON number), both at the address
//     path.Join("/cluster/node", node, source); a clock-class change has
//     only the metric; the sync-state change only the notification.
//     publishGNSSEvent adds a metric at <address>/gpsFix.
//   - redhat-cne/sdk-go pkg/event/event_data.go: O-RAN v3 field names
//     ResourceAddress, data_type, value_type; value types enumeration,
//     decimal64.3, redfish-event. pkg/event/event_unmarshal.go
//     readDataValue reads a decimal64.3 from a JSON string
//     (strconv.ParseFloat(cacheValue.(string))) and also reads the v1
//     names resource, dataType, valueType ("tolerant older releases");
//     any other value type is "not supported".
//   - redhat-cne/sdk-go pkg/event/ptp/types.go and resource.go: the event
//     types and resources (and v1's /sync/ptp-status/ptp-clock-class-change).
//   - the seed (004): v1 names, "version": "v1.0", a decimal 100.3 as a
//     number, a redfish-event object value.

// val is one element of values.
type val map[string]any

// v3 returns a value with O-RAN v3 field names.
func v3(addr, dataType, valueType string, value any) val {
	return val{"ResourceAddress": addr, "data_type": dataType, "value_type": valueType, "value": value}
}

// v1 returns a value with the v1 field names.
func v1(addr, dataType, valueType string, value any) val {
	return val{"resource": addr, "dataType": dataType, "valueType": valueType, "value": value}
}

// addr returns the address cloud-event-proxy gives a resource of node.
func addr(node, resource string) string { return "/cluster/node/" + node + resource }

// data returns event data {version, values}.
func data(version string, values ...val) []byte {
	b, err := json.Marshal(map[string]any{"version": version, "values": values})
	if err != nil {
		panic(err)
	}
	return b
}

// ptpState returns the data of a ptp-state-change as cloud-event-proxy
// sends it: the state and the offset.
func ptpState(node, state string, offset int64) []byte {
	a := addr(node, "/sync/ptp-status/lock-state")
	return data("1.0", v3(a, "notification", "enumeration", state), v3(a, "metric", "decimal64.3", offset))
}

// ev returns a CloudEvent of spec version spec read from topic/partition
// at offset.
func ev(t testing.TB, spec, typ string, at time.Time, part int32, offset int64, d []byte) *transport.Event {
	t.Helper()
	e := event.New(spec)
	e.SetID(fmt.Sprintf("id-%d-%d", part, offset))
	e.SetSource("/sync/ptp-status/lock-state")
	e.SetType(typ)
	if !at.IsZero() {
		e.SetTime(at)
	}
	if err := e.SetData(event.ApplicationJSON, d); err != nil {
		t.Fatal(err)
	}
	return &transport.Event{Event: e, Origin: bundle.Origin{Topic: "cne", Partition: part, Offset: offset}}
}

// t0 is the time of the tests' first events, with nanoseconds.
var t0 = time.Date(2026, 11, 26, 9, 0, 0, 123456789, time.UTC)

// decoded decodes b as a worker does (bundle.Bundle.Decode with the
// registry's decoder) and returns its payload.
func decoded(t testing.TB, b *bundle.Bundle) *cne.Payload {
	t.Helper()
	reg, err := dbsyncers.NewRegistry(cne.Syncers()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Decode(reg.Decode); err != nil {
		t.Fatal(err)
	}
	return b.Payload.(*cne.Payload)
}
