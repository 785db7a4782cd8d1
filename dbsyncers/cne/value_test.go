package cne_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/deadletter"
)

func TestBundleReadsUpstreamShapes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		typ   string
		data  []byte
		node  string
		want  []cne.Value // key, node, type and text only
		raw   []string    // the stored value as sent
		vtype []cne.ValueType
	}{
		{
			name: "ptp-state-change, O-RAN v3, offset a JSON number (cloud-event-proxy GetPTPEventsData)",
			typ:  cne.PtpStateChange, data: ptpState("compute-1.example.com", "LOCKED", -5), node: "compute-1.example.com",
			want: []cne.Value{
				{Address: "/cluster/node/compute-1.example.com/sync/ptp-status/lock-state", DataType: "metric", Text: "-5"},
				{Address: "/cluster/node/compute-1.example.com/sync/ptp-status/lock-state", DataType: "notification", Text: "LOCKED"},
			},
			raw:   []string{"-5", `"LOCKED"`},
			vtype: []cne.ValueType{cne.Decimal, cne.Enumeration},
		},
		{
			name: "decimal64.3 as a string (sdk-go v2 readDataValue)",
			typ:  cne.PtpStateChange,
			data: data("1.0",
				v3(addr("n1", cne.ResourceLockState), "notification", "enumeration", "HOLDOVER"),
				v3(addr("n1", cne.ResourceLockState), "metric", "decimal64.3", "9287556")),
			node: "n1",
			want: []cne.Value{
				{Address: addr("n1", cne.ResourceLockState), DataType: "metric", Text: "9287556"},
				{Address: addr("n1", cne.ResourceLockState), DataType: "notification", Text: "HOLDOVER"},
			},
			raw:   []string{`"9287556"`, `"HOLDOVER"`},
			vtype: []cne.ValueType{cne.Decimal, cne.Enumeration},
		},
		{
			name: "v1 names, the seed's example (version v1.0, 100.3 a number)",
			typ:  cne.SeedSyncStateChange,
			data: data("v1.0",
				v1(addr("n2", "/sync/sync-status/sync-state"), "notification", "enumeration", "ACQUIRING-SYNC"),
				v1(addr("n2", "/sync/sync-status/sync-state"), "metric", "decimal64.3", 100.3)),
			node: "n2",
			want: []cne.Value{
				{Address: addr("n2", cne.ResourceSyncState), DataType: "metric", Text: "100.3"},
				{Address: addr("n2", cne.ResourceSyncState), DataType: "notification", Text: "ACQUIRING-SYNC"},
			},
			raw:   []string{"100.3", `"ACQUIRING-SYNC"`},
			vtype: []cne.ValueType{cne.Decimal, cne.Enumeration},
		},
		{
			name: "clock class, v1 resource name, metric only",
			typ:  cne.PtpClockClassChange,
			data: data("v1", v3(addr("n3", cne.ResourceClockClassV1), "metric", "decimal64.3", 248)),
			node: "n3",
			want: []cne.Value{{Address: addr("n3", cne.ResourceClockClassV1), DataType: "metric", Text: "248"}},
			raw:  []string{"248"}, vtype: []cne.ValueType{cne.Decimal},
		},
		{
			name: "gnss with its gpsFix metric (publishGNSSEvent)",
			typ:  cne.GnssStateChange,
			data: data("1.0",
				v3(addr("n4", cne.ResourceGnss), "notification", "enumeration", "SYNCHRONIZED"),
				v3(addr("n4", cne.ResourceGnss), "metric", "decimal64.3", 1),
				v3(addr("n4", cne.ResourceGnss)+"/gpsFix", "metric", "decimal64.3", 5)),
			node: "n4",
			want: []cne.Value{
				{Address: addr("n4", cne.ResourceGnss), DataType: "metric", Text: "1"},
				{Address: addr("n4", cne.ResourceGnss), DataType: "notification", Text: "SYNCHRONIZED"},
				{Address: addr("n4", cne.ResourceGnss) + "/gpsFix", DataType: "metric", Text: "5"},
			},
			raw:   []string{"1", `"SYNCHRONIZED"`, "5"},
			vtype: []cne.ValueType{cne.Decimal, cne.Enumeration, cne.Decimal},
		},
		{
			name: "redfish-event object (the seed's hardware event), an unknown type stored",
			typ:  "event.redfish.alert",
			data: data("v1.0", v1(addr("n5", "/redfish/v1/Systems"), "notification", "redfish-event",
				map[string]any{"@odata.type": "#Event.v1_3_0.Event", "Id": "5e004f5a", "Events": []any{map[string]any{"EventId": "2162", "MessageId": "TMP0100"}}})),
			node:  "n5",
			want:  []cne.Value{{Address: addr("n5", "/redfish/v1/Systems"), DataType: "notification"}},
			raw:   []string{`{"@odata.type":"#Event.v1_3_0.Event","Events":[{"EventId":"2162","MessageId":"TMP0100"}],"Id":"5e004f5a"}`},
			vtype: []cne.ValueType{cne.RedfishEvent},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ev(t, event.CloudEventsVersionV1, tc.typ, t0, 1, 7, tc.data)
			if !(cne.Family{}).Owns(tc.typ) {
				t.Fatalf("the family does not own %q", tc.typ)
			}
			b, err := cne.Family{}.Bundle(e)
			if err != nil {
				t.Fatal(err)
			}
			if b.Hub != tc.node || b.Type != cne.BundleType || string(b.Raw) != string(tc.data) || !b.EventTime.Equal(t0) {
				t.Errorf("bundle hub %q type %q raw %s time %v", b.Hub, b.Type, b.Raw, b.EventTime)
			}
			if b.Payload != nil {
				t.Fatal("the bundle was decoded when read: its values would be held at four times their bytes")
			}
			p := decoded(t, b)
			if len(p.Values) != len(tc.want) {
				t.Fatalf("%d values, want %d: %+v", len(p.Values), len(tc.want), p.Values)
			}
			for i, w := range tc.want {
				g := p.Values[i]
				if g.Type != tc.typ || g.Address != w.Address || g.DataType != w.DataType || g.Text != w.Text || g.Node != tc.node ||
					string(g.Raw) != tc.raw[i] || g.ValueType != tc.vtype[i] || g.TimeNS != t0.UnixNano() || g.Origin.Offset != 7 {
					t.Errorf("value %d: %+v, want %+v raw %s type %s", i, g, w, tc.raw[i], tc.vtype[i])
				}
			}
		})
	}
}

func TestBundleRejects(t *testing.T) {
	a := addr("n1", cne.ResourceLockState)
	for _, tc := range []struct {
		name   string
		data   string
		noTime bool
		err    error
		reason deadletter.Reason
	}{
		{"empty values", `{"version":"1.0","values":[]}`, false, cne.ErrEmptyValues, deadletter.BadPayload},
		{"no values", `{"version":"1.0"}`, false, cne.ErrEmptyValues, deadletter.BadPayload},
		{"not an object", `[1,2]`, false, cne.ErrMalformedData, deadletter.BadPayload},
		{"values not an array", `{"values":{}}`, false, cne.ErrMalformedData, deadletter.BadPayload},
		{"no address", `{"values":[{"data_type":"notification","value_type":"enumeration","value":"LOCKED"}]}`, false, cne.ErrNoAddress, deadletter.BadPayload},
		// Names are matched exactly, as sdk-go's reader (a switch on the
		// key) matches them; encoding/json would have taken these.
		{"address under another case", `{"values":[{"resourceaddress":"` + a + `","data_type":"notification","value_type":"enumeration","value":"LOCKED"}]}`, false, cne.ErrNoAddress, deadletter.BadPayload},
		{"value type under another case", `{"values":[{"ResourceAddress":"` + a + `","data_type":"notification","Value_Type":"enumeration","value":"LOCKED"}]}`, false, cne.ErrUnknownValueType, deadletter.BadPayload},
		{"empty address", `{"values":[{"ResourceAddress":"","data_type":"notification","value_type":"enumeration","value":"LOCKED"}]}`, false, cne.ErrNoAddress, deadletter.BadPayload},
		// O-RAN's own example addresses name no /cluster/node/ segment.
		{"no node in the address", `{"values":[{"ResourceAddress":"/east-edge-10/Node3/sync/sync-status/sync-state","data_type":"notification","value_type":"enumeration","value":"LOCKED"}]}`, false, cne.ErrNoNode, deadletter.BadPayload},
		{"empty node", `{"values":[{"ResourceAddress":"/cluster/node//sync","data_type":"notification","value_type":"enumeration","value":"LOCKED"}]}`, false, cne.ErrNoNode, deadletter.BadPayload},
		// StarlingX's ptp-notification sends value_type "metric", which
		// sdk-go's reader does not support.
		{"unknown value_type", `{"values":[{"ResourceAddress":"` + a + `","data_type":"metric","value_type":"metric","value":"6"}]}`, false, cne.ErrUnknownValueType, deadletter.BadPayload},
		{"no value_type", `{"values":[{"ResourceAddress":"` + a + `","data_type":"metric","value":"6"}]}`, false, cne.ErrUnknownValueType, deadletter.BadPayload},
		{"decimal not a number", `{"values":[{"ResourceAddress":"` + a + `","data_type":"metric","value_type":"decimal64.3","value":"fast"}]}`, false, cne.ErrMalformedValue, deadletter.BadPayload},
		{"decimal hexadecimal", `{"values":[{"ResourceAddress":"` + a + `","data_type":"metric","value_type":"decimal64.3","value":"0x1p3"}]}`, false, cne.ErrMalformedValue, deadletter.BadPayload},
		{"decimal NaN", `{"values":[{"ResourceAddress":"` + a + `","data_type":"metric","value_type":"decimal64.3","value":"NaN"}]}`, false, cne.ErrMalformedValue, deadletter.BadPayload},
		{"decimal out of range", `{"values":[{"ResourceAddress":"` + a + `","data_type":"metric","value_type":"decimal64.3","value":1e999}]}`, false, cne.ErrMalformedValue, deadletter.BadPayload},
		{"decimal a boolean", `{"values":[{"ResourceAddress":"` + a + `","data_type":"metric","value_type":"decimal64.3","value":true}]}`, false, cne.ErrMalformedValue, deadletter.BadPayload},
		{"decimal missing", `{"values":[{"ResourceAddress":"` + a + `","data_type":"metric","value_type":"decimal64.3"}]}`, false, cne.ErrMalformedValue, deadletter.BadPayload},
		{"enumeration a number", `{"values":[{"ResourceAddress":"` + a + `","data_type":"notification","value_type":"enumeration","value":3}]}`, false, cne.ErrMalformedValue, deadletter.BadPayload},
		{"enumeration empty", `{"values":[{"ResourceAddress":"` + a + `","data_type":"notification","value_type":"enumeration","value":""}]}`, false, cne.ErrMalformedValue, deadletter.BadPayload},
		{"redfish-event a string", `{"values":[{"ResourceAddress":"` + a + `","data_type":"notification","value_type":"redfish-event","value":"x"}]}`, false, cne.ErrMalformedValue, deadletter.BadPayload},
		{"no data_type", `{"values":[{"ResourceAddress":"` + a + `","value_type":"enumeration","value":"LOCKED"}]}`, false, cne.ErrMalformedValue, deadletter.BadPayload},
		{"both names, two addresses", `{"values":[{"ResourceAddress":"` + a + `","resource":"/cluster/node/n2/x","data_type":"notification","value_type":"enumeration","value":"LOCKED"}]}`, false, cne.ErrMalformedValue, deadletter.BadPayload},
		{"a value not an object", `{"values":[null]}`, false, cne.ErrMalformedValue, deadletter.BadPayload},
		{"two nodes", `{"values":[{"ResourceAddress":"` + a + `","data_type":"notification","value_type":"enumeration","value":"LOCKED"},` +
			`{"ResourceAddress":"/cluster/node/n2/sync","data_type":"notification","value_type":"enumeration","value":"LOCKED"}]}`, false, cne.ErrMixedNodes, deadletter.BadPayload},
		{"no time", string(ptpState("n1", "LOCKED", 1)), true, cne.ErrNoTime, deadletter.MissingAttribute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := t0
			if tc.noTime {
				at = time.Time{}
			}
			_, err := cne.Family{}.Bundle(ev(t, event.CloudEventsVersionV1, cne.PtpStateChange, at, 0, 1, []byte(tc.data)))
			var reasoned deadletter.Reasoned
			if !errors.Is(err, tc.err) || !errors.As(err, &reasoned) || reasoned.DeadLetterReason() != tc.reason {
				t.Fatalf("err %v, want %v with reason %s", err, tc.err, tc.reason)
			}
		})
	}
}

// The family owns the model's types, known or not, and nothing of STB's,
// the global-hub agent's or OCM's work agents'.
func TestOwns(t *testing.T) {
	for typ, want := range map[string]bool{
		cne.SyncStateChange: true, cne.PtpStateChange: true, cne.OsClockSyncStateChange: true, cne.GnssStateChange: true,
		cne.PtpClockClassChange: true, cne.SynceStateChangeV1: true, cne.SeedSyncStateChange: true, "event.redfish.alert": true,
		"event.sync.some-future-status.change":                                            true,
		"io.stb.status.v1.heartbeat":                                                      false,
		"io.open-cluster-management.operator.multiclusterglobalhubs.managedcluster":       false,
		"io.open-cluster-management.works.v1alpha1.manifestbundles.status.update_request": false,
		"": false,
	} {
		if got := (cne.Family{}).Owns(typ); got != want {
			t.Errorf("Owns(%q) = %v, want %v", typ, got, want)
		}
	}
}

func TestAfter(t *testing.T) {
	at := func(ns int64, part int32, off int64, idx int) *cne.Value {
		v := &cne.Value{TimeNS: ns, Index: idx}
		v.Origin.Topic, v.Origin.Partition, v.Origin.Offset = "cne", part, off
		return v
	}
	for _, tc := range []struct {
		name string
		v, w *cne.Value
		want bool
	}{
		{"later time", at(2, 0, 1, 0), at(1, 0, 9, 0), true},
		{"earlier time, later offset: a late copy or a clock stepped back", at(1, 0, 9, 0), at(2, 0, 1, 0), false},
		{"later by one nanosecond", at(1_000_000_001, 0, 1, 0), at(1_000_000_000, 0, 2, 0), true},
		{"same time, later offset", at(1, 0, 2, 0), at(1, 0, 1, 0), true},
		{"same time, earlier offset", at(1, 0, 1, 0), at(1, 0, 2, 0), false},
		{"same time, higher partition", at(1, 1, 1, 0), at(1, 0, 9, 0), true},
		{"same time, lower partition, later offset", at(1, 0, 9, 0), at(1, 1, 1, 0), false},
		{"same message, later value", at(1, 0, 1, 1), at(1, 0, 1, 0), true},
		{"the same", at(1, 0, 1, 0), at(1, 0, 1, 0), false},
	} {
		if got := tc.v.After(tc.w); got != tc.want {
			t.Errorf("%s: After = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Decimals PostgreSQL's numeric reads exactly as written, and nothing else.
func TestDecimalText(t *testing.T) {
	a := addr("n1", cne.ResourceLockState)
	for text, ok := range map[string]bool{
		"0": true, "-5": true, "+5": true, "100.3": true, "9287556": true, "1.": true, ".5": true, "1e3": true, "1.5E-2": true, "-0.125e+10": true,
		"": false, ".": false, "-": false, "e3": false, "1e": false, "1e+": false, "0x1p3": false, "1_000": false, "NaN": false,
		"Inf": false, "infinity": false, " 1": false, "1 ": false, "1.2.3": false, "--1": false,
		// numeric's scale is at most 16,383: ParseFloat reads these as 0.
		"1e-400": true, "1e-1000": true, "1e-1001": false, "1e-20000": false, "1e+1000": false,
		"0.000000000000000000000000000000000000000000000000000000000000001": false, // 65 bytes
	} {
		for _, raw := range []string{`"` + text + `"`, text} {
			if raw == "" || (raw == text && (!json.Valid([]byte(raw)) || strings.TrimSpace(raw) != raw)) {
				continue // not JSON (the whole data is malformed), or the number 1 with white space
			}
			d := `{"values":[{"ResourceAddress":"` + a + `","data_type":"metric","value_type":"decimal64.3","value":` + raw + `}]}`
			_, err := cne.Family{}.Bundle(ev(t, event.CloudEventsVersionV1, cne.PtpStateChange, t0, 0, 1, []byte(d)))
			if (err == nil) != ok {
				t.Errorf("decimal %s: err %v, want ok=%v", raw, err, ok)
			}
		}
	}
}

// A bundle's Raw is the event's data and its Attrs the event's Context;
// a bundle without them (some other code built it, or the data came with
// the header line that used to carry the attributes) is a bad_payload.
func TestDecodeNeedsHeader(t *testing.T) {
	for _, raw := range []string{string(ptpState("n1", "LOCKED", 1)), "{\"type\":3}\n{}", "\n{}"} {
		_, err := cne.Syncer().DecodeBundle(&bundle.Bundle{Hub: "n1", Type: cne.BundleType, Raw: []byte(raw)})
		var reasoned deadletter.Reasoned
		if !errors.As(err, &reasoned) || reasoned.DeadLetterReason() != deadletter.BadPayload {
			t.Errorf("decode %.30q: %v, want a bad_payload", raw, err)
		}
	}
}

// Merge of anything but two payloads (a bug upstream) yields what Plan
// refuses: the group is dead-lettered rather than a value silently lost.
func TestMergeOfOtherPayloadsIsRefused(t *testing.T) {
	for _, m := range []any{cne.Merge(&cne.Payload{}, "not a payload"), cne.Merge(nil, &cne.Payload{})} {
		_, err := cne.Syncer().Plan([]*bundle.Bundle{{Hub: "n1", Type: cne.BundleType, Payload: m}})
		var reasoned deadletter.Reasoned
		if !errors.As(err, &reasoned) || reasoned.DeadLetterReason() != deadletter.BadPayload {
			t.Errorf("plan of %T: %v, want a bad_payload", m, err)
		}
	}
}

// A bad event whose node is known (from the values before the bad one) is
// dead-lettered under that node: the reader takes the hub of the bundle
// returned with the error (transport/family.go decodeFamily).
func TestRejectNamesTheNode(t *testing.T) {
	a := addr("n7", cne.ResourceLockState)
	d := `{"values":[{"ResourceAddress":"` + a + `","data_type":"notification","value_type":"enumeration","value":"LOCKED"},` +
		`{"ResourceAddress":"` + a + `","data_type":"metric","value_type":"metric","value":"6"}]}`
	b, err := cne.Family{}.Bundle(ev(t, event.CloudEventsVersionV1, cne.PtpStateChange, t0, 0, 1, []byte(d)))
	if !errors.Is(err, cne.ErrUnknownValueType) || b == nil || b.Hub != "n7" {
		t.Fatalf("bundle %+v, err %v; want an unknown value_type under node n7", b, err)
	}
}
