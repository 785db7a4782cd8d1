package cne_test

import (
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/stbridge/stb/dbsyncers/cne"
)

// BenchmarkFamilyBundle: what the reader spends in the family on one
// ptp-state-change as cloud-event-proxy sends it (two values), after the
// CloudEvents binding has read the message.
func BenchmarkFamilyBundle(b *testing.B) {
	e := ev(b, event.CloudEventsVersionV1, cne.PtpStateChange, t0, 0, 1, ptpState("compute-1.example.com", "LOCKED", -12))
	b.SetBytes(int64(len(e.Data())))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (cne.Family{}).Bundle(e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode: what a worker (or a unit merging) spends decoding one
// such bundle (its Context and Raw) into its payload.
func BenchmarkDecode(b *testing.B) {
	e := ev(b, event.CloudEventsVersionV1, cne.PtpStateChange, t0, 0, 1, ptpState("compute-1.example.com", "LOCKED", -12))
	bnd, err := (cne.Family{}).Bundle(e)
	if err != nil {
		b.Fatal(err)
	}
	s := cne.Syncer()
	b.SetBytes(int64(len(bnd.Raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.DecodeBundle(bnd); err != nil {
			b.Fatal(err)
		}
	}
}
