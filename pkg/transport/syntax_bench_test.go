package transport_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
)

// catchUpMix returns the messages of a short simulation of the catch-up
// scenario's shape (10 clusters per hub, the default policies), STB's
// format, as the reader consumes them.
func catchUpMix(tb testing.TB) []*kafka.Message {
	tb.Helper()
	var out []*kafka.Message
	pub := sim.PublisherFunc(func(_ context.Context, m sim.Message) error {
		msg, err := transport.Encode(transport.Envelope(m), transport.DefaultTypePrefix)
		if err != nil {
			return err
		}
		out = append(out, consumed(msg, 0, int64(len(out))))
		return nil
	})
	if _, err := sim.Run(context.Background(), sim.Config{Hubs: 20, Clusters: 10, Generations: 24, Seed: 1}, pub, nil); err != nil {
		tb.Fatal(err)
	}
	return out
}

// ghCatchUpMix is catchUpMix for the global-hub agents (per-hub topics).
func ghCatchUpMix(tb testing.TB) []*kafka.Message {
	tb.Helper()
	rec := &ghRecorder{byHub: map[string][]sim.GHMessage{}}
	if _, err := sim.Run(context.Background(), sim.Config{Hubs: 20, Clusters: 10, Generations: 24, Seed: 1, Agent: sim.AgentGlobalHub}, rec, nil); err != nil {
		tb.Fatal(err)
	}
	var out []*kafka.Message
	for _, msgs := range rec.byHub {
		for _, m := range msgs {
			e := transport.GlobalHubEvent{
				Topic: m.Topic, Hub: m.Hub, Type: strings.TrimPrefix(m.Type, bundle.GlobalHubPrefix), ID: m.ID,
				Version: m.Version.String(), SendMode: m.SendMode, Extensions: m.Extensions, Time: m.Time, Data: m.Data,
				ChunkSize: m.ChunkSize,
			}
			if m.Dependency != nil {
				e.Dependency = m.Dependency.String()
			}
			if e.ChunkSize > 0 {
				continue // assembled before decoding: not what is measured
			}
			out = append(out, consumed(ghEncode(tb, e), 0, int64(len(out))))
		}
	}
	return out
}

// BenchmarkSyntaxCheck: what the syntax check of every message's data at
// read (checkSyntax, a scan that builds nothing) costs over the catch-up's
// mix, against the reader's whole decoding of a message (issue 34, item
// 10). "decode" is Decode as the reader runs it, the check included;
// "check" the check alone on the same data, so that decode minus check is
// the reader without it; "encoding-json" encoding/json.Valid on the same
// data, for comparison. ns/op is per message of the mix; MB/s of its data.
func BenchmarkSyntaxCheck(b *testing.B) {
	gh := transport.NewGlobalHub()
	for _, mix := range []struct {
		name   string
		msgs   func(testing.TB) []*kafka.Message
		decode func(*kafka.Message, transport.Rules, time.Time) (*bundle.Bundle, *transport.Reject)
	}{
		{"stb", catchUpMix, transport.Decode},
		// The global hub's runs are learnt on the first pass; after it
		// every event maps as one read again.
		{"globalhub", ghCatchUpMix, gh.Decode},
	} {
		msgs := mix.msgs(b)
		rules := ghRules(b)
		rules.MaxBundleBytes = 64 << 20
		total := 0
		var datas [][]byte
		for i, m := range msgs {
			total += len(m.Value)
			bd, rej := mix.decode(m, rules, time.Time{})
			if rej != nil && !rej.Skipped {
				b.Fatalf("message %d rejected: %v", i, rej)
			}
			if bd != nil {
				datas = append(datas, bd.Raw)
			}
		}
		b.Run(mix.name+"/decode", func(b *testing.B) {
			b.SetBytes(int64(total / len(msgs)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, rej := mix.decode(msgs[i%len(msgs)], rules, time.Time{}); rej != nil && !rej.Skipped {
					b.Fatal(rej)
				}
				i++
			}
		})
		for _, check := range []struct {
			name  string
			valid func([]byte) bool
		}{
			{"check", func(data []byte) bool { return transport.CheckSyntax(data) == nil }},
			{"encoding-json", func(data []byte) bool { return len(data) == 0 || json.Valid(data) }},
		} {
			b.Run(mix.name+"/"+check.name, func(b *testing.B) {
				b.SetBytes(int64(total / len(msgs)))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					// Every message's data: the skipped ones' too, as if
					// checked (a few).
					if !check.valid(datas[i%len(datas)]) {
						b.Fatal("not JSON")
					}
					i++
				}
			})
		}
	}
}
