package cne_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/pkg/deadletter"
)

// FuzzBundle: whatever the data, the family either refuses the event with
// a dead-letter reason or makes a bundle whose decoded values all name its
// node, carry a text their type allows, and are what the data holds, one
// per key.
func FuzzBundle(f *testing.F) {
	a := addr("n1", cne.ResourceLockState)
	for _, seed := range [][]byte{
		ptpState("compute-1.example.com", "LOCKED", -5),
		data("v1.0", v1(a, "notification", "enumeration", "HOLDOVER"), v1(a, "metric", "decimal64.3", 100.3)),
		data("1.0", v3(a, "metric", "decimal64.3", "9287556"), v3(a, "metric", "decimal64.3", "1e3")),
		data("v1", v1(addr("n5", "/redfish/v1/Systems"), "notification", "redfish-event", map[string]any{"Id": "1"})),
		[]byte(`{"version":"1.0","values":[]}`),
		[]byte(`{"values":[{"ResourceAddress":"` + a + `","data_type":"metric","value_type":"metric","value":"6"}]}`),
		[]byte(`{"values":[null]}`),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		e := ev(t, event.CloudEventsVersionV1, cne.PtpStateChange, t0, 0, 1, d)
		b, err := cne.Family{}.Bundle(e)
		if err != nil {
			var reasoned deadletter.Reasoned
			if !errors.As(err, &reasoned) || reasoned.DeadLetterReason() == "" {
				t.Fatalf("refused without a reason: %v", err)
			}
			return
		}
		if err := b.Decode(cne.Syncer().DecodeBundle); err != nil {
			t.Fatalf("checked when read, refused when decoded: %v", err)
		}
		p := b.Payload.(*cne.Payload)
		if len(p.Values) == 0 {
			t.Fatal("a bundle without values")
		}
		for i, v := range p.Values {
			node, ok := cne.NodeOf(v.Address)
			if !ok || node != b.Hub || v.Node != b.Hub || v.DataType == "" || v.Type != cne.PtpStateChange || v.TimeNS != t0.UnixNano() {
				t.Fatalf("value %d %+v in a bundle of node %q", i, v, b.Hub)
			}
			if i > 0 && !keyLess(&p.Values[i-1], &v) {
				t.Fatalf("values not sorted by key, one per key: %+v then %+v", p.Values[i-1], v)
			}
			switch v.ValueType {
			case cne.Enumeration:
				if v.Text == "" {
					t.Fatalf("empty enumeration %+v", v)
				}
			case cne.Decimal:
				if _, err := strconv.ParseFloat(v.Text, 64); err != nil {
					t.Fatalf("decimal text %q: %v", v.Text, err)
				}
			case cne.RedfishEvent:
				if len(v.Raw) == 0 || v.Raw[0] != '{' {
					t.Fatalf("redfish value %s", v.Raw)
				}
			default:
				t.Fatalf("value type %q", v.ValueType)
			}
		}
	})
}

func keyLess(a, b *cne.Value) bool {
	if a.Type != b.Type {
		return a.Type < b.Type
	}
	if a.Address != b.Address {
		return a.Address < b.Address
	}
	return a.DataType < b.DataType
}
