package transport_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// TestReaderMixedInput publishes valid bundles interleaved with every kind
// of bad message and checks that the valid ones reach the sink in partition
// order, each bad one is rejected with its reason, logged and counted, and
// the committed positions move past all of them.
func TestReaderMixedInput(t *testing.T) {
	b := startBroker(t, 3)
	pub := newPublisher(t, b.Addr())
	ctx := context.Background()

	// Every case once per round, with a fresh hub name per message, and
	// valid heartbeats of a few steady hubs in between.
	expect := map[string]deadletter.Reason{} // test case header → reason, "" for valid
	steadyHubs := []string{"hub-a", "hub-b", "hub-c", "hub-d"}
	steadyVersions := map[string][]uint64{}
	published := 0
	publish := func(id string, msg *kafka.Message) {
		t.Helper()
		msg.Headers = append(msg.Headers, kafka.Header{Key: caseHeader, Value: []byte(id)})
		if err := pub.PublishMessage(ctx, msg); err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
		published++
	}
	gen := uint64(0)
	for round := range 2 {
		for i, tc := range decodeCases() {
			id := fmt.Sprintf("r%d-c%d", round, i)
			expect[id] = tc.reason
			publish(id, tc.build(t, "status", "case-"+id))

			hub := steadyHubs[i%len(steadyHubs)]
			gen++
			env := validEnvelope("status", hub)
			env.Version = bundle.Version{Incarnation: 1, Generation: gen}
			steadyVersions[hub] = append(steadyVersions[hub], gen)
			publish("steady-"+hub+"-"+fmt.Sprint(gen), mustEncode(t, env))
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if s := pub.Stats(); s.Delivered != uint64(published) || s.Failed != 0 {
		t.Fatalf("publisher stats %+v, want %d delivered", s, published)
	}

	sink := &testSink{}
	h := startReader(t, b, "mixed", &memOffsets{}, sink)
	waitFor(t, waitTimeout, "every message to be read", func() bool {
		return len(sink.snapshot())+len(h.rejects.snapshot()) == published
	})
	bundles, rejects := sink.snapshot(), h.rejects.snapshot()

	// Each reject has the reason its case expects.
	wantRejects := 0
	for _, reason := range expect {
		if reason != "" {
			wantRejects++
		}
	}
	if len(rejects) != wantRejects {
		t.Errorf("%d rejects, want %d", len(rejects), wantRejects)
	}
	byReason := map[deadletter.Reason]int{}
	for _, rej := range rejects {
		id := rej.Headers[caseHeader]
		want, ok := expect[id]
		if !ok || want == "" {
			t.Errorf("unexpected reject of %q: %s: %v", id, rej.Reason, rej.Err)
			continue
		}
		if rej.Reason != want {
			t.Errorf("case %s rejected as %s (%v), want %s", id, rej.Reason, rej.Err, want)
		}
		if rej.Origin.Topic != "status" || rej.Err == nil {
			t.Errorf("case %s: reject lacks origin or error: %+v", id, rej)
		}
		byReason[rej.Reason]++
	}

	// Valid bundles: every expected one, each partition in offset order,
	// each steady hub's versions in publish order.
	lastOffset := map[int32]int64{}
	gotVersions := map[string][]uint64{}
	accepted := 0
	for _, bd := range bundles {
		if prev, ok := lastOffset[bd.Origin.Partition]; ok && bd.Origin.Offset <= prev {
			t.Errorf("partition %d: offset %d after %d", bd.Origin.Partition, bd.Origin.Offset, prev)
		}
		lastOffset[bd.Origin.Partition] = bd.Origin.Offset
		if strings.HasPrefix(bd.Hub, "hub-") {
			gotVersions[bd.Hub] = append(gotVersions[bd.Hub], bd.Version.Generation)
		} else if want := expect[strings.TrimPrefix(bd.Hub, "case-")]; want != "" {
			t.Errorf("bundle of %s accepted, want reject %s", bd.Hub, want)
		}
		accepted++
	}
	for hub, want := range steadyVersions {
		if !slices.Equal(gotVersions[hub], want) {
			t.Errorf("%s versions %v, want %v", hub, gotVersions[hub], want)
		}
	}

	// Logged at warn with the reason and where the message was, at most
	// ten a second: a flood of bad messages must not flood the log (every
	// one is counted and dead-lettered; a logged line says how many were
	// not logged before it).
	logged := h.logs.FilterMessage("message rejected").FilterLevelExact(zapcore.WarnLevel).All()
	if len(logged) < min(len(rejects), 10) || len(logged) > len(rejects) {
		t.Errorf("%d reject log lines for %d rejects, want between %d and %d", len(logged), len(rejects), min(len(rejects), 10), len(rejects))
	}
	for _, l := range logged {
		f := l.ContextMap()
		if f["reason"] == nil || f["topic"] != "status" || f["offset"] == nil || f["partition"] == nil {
			t.Errorf("reject log line lacks fields: %v", f)
			break
		}
	}

	// Counted.
	for _, reason := range deadletter.ReadReasons {
		got := counterValue(t, h.registry, "stb_transport_rejected_total", map[string]string{"reason": string(reason)})
		if int(got) != byReason[reason] {
			t.Errorf("stb_transport_rejected_total{reason=%q} = %v, want %d", reason, got, byReason[reason])
		}
		// A decoder's panic is a bug, not a case of input: the test
		// decoder panics only in TestReaderDecoderPanic. STB's profile
		// rejects no payload when read: its data is decoded, and a bad
		// one dead-lettered, when it is written. Chunks are the
		// global-hub profile's (globalhub_chunks_timeout_test.go).
		if byReason[reason] == 0 && reason != deadletter.DecodePanic && reason != deadletter.BadPayload && reason != deadletter.ChunkTimeout {
			t.Errorf("no case exercised reason %s", reason)
		}
	}
	if got := counterValue(t, h.registry, "stb_transport_messages_total",
		map[string]string{"topic": "status", "outcome": "accepted"}); int(got) != accepted {
		t.Errorf("accepted messages counted %v, want %d", got, accepted)
	}
	if s := h.reader.Stats(); s.Read != uint64(published) || s.Accepted != uint64(accepted) || s.Rejected != uint64(len(rejects)) {
		t.Errorf("stats %+v, want read %d accepted %d rejected %d", s, published, accepted, len(rejects))
	}
	if problems, err := testutil.GatherAndLint(h.registry); err != nil || len(problems) > 0 {
		t.Errorf("metrics lint: %v %v", problems, err)
	}

	// Committed positions: rejects are done at once, so each partition's
	// position is its first unreleased bundle; once the bundles are
	// released it is past the last message read.
	lowest, end := map[int32]int64{}, map[int32]int64{}
	for _, bd := range bundles {
		p := bd.Origin.Partition
		if o, ok := lowest[p]; !ok || bd.Origin.Offset < o {
			lowest[p] = bd.Origin.Offset
		}
	}
	for _, o := range append(originsOf(bundles), rejectOrigins(rejects)...) {
		end[o.Partition] = max(end[o.Partition], o.Offset+1)
	}
	for p, want := range lowest {
		tr, ok := lookup(h.committer, "status", p)
		if !ok {
			t.Fatalf("partition %d not assigned in the committer", p)
		}
		if pos, _ := tr.Position(); pos != want {
			t.Errorf("partition %d: position %d while bundles are held, want %d", p, pos, want)
		}
	}
	for _, bd := range bundles {
		bd.Release()
	}
	if err := h.committer.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	for p, want := range end {
		got, ok := h.store.get("status", p)
		if !ok || got.Offset != want || got.ClusterID != "cluster-a" {
			t.Errorf("partition %d: stored %+v (stored=%v), want offset %d in cluster-a", p, got, ok, want)
		}
	}
}

func originsOf(bs []*bundle.Bundle) []bundle.Origin {
	out := make([]bundle.Origin, len(bs))
	for i, b := range bs {
		out[i] = b.Origin
	}
	return out
}

func rejectOrigins(rs []deadletter.Letter) []bundle.Origin {
	out := make([]bundle.Origin, len(rs))
	for i, r := range rs {
		out[i] = r.Origin
	}
	return out
}

// TestReaderStartPosition checks where a restarted reader starts: at a
// stored position of the same cluster, and at the earliest offset when the
// stored one is from another cluster, absent, or cannot be loaded.
func TestReaderStartPosition(t *testing.T) {
	b := startBroker(t, 1)
	pub := newPublisher(t, b.Addr())
	ctx := context.Background()
	const total = 10
	for g := range uint64(total) {
		env := validEnvelope("status", "hub-r")
		env.Version = bundle.Version{Incarnation: 1, Generation: g}
		if err := pub.Publish(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	stored := func(offset int64, cluster string) *memOffsets {
		return &memOffsets{positions: map[string]committer.Position{
			committer.RowName("status", 0): {Topic: "status", Partition: 0, Offset: offset, ClusterID: cluster},
		}}
	}
	for _, tc := range []struct {
		name      string
		offsets   *memOffsets
		wantFirst int64
		wantStart string
	}{
		{"stored position of this cluster", stored(6, b.ClusterID()), 6, "stored"},
		{"stored position of another cluster", stored(6, "another-cluster"), 0, "reset"},
		{"nothing stored", &memOffsets{}, 0, "reset"},
		{"store unavailable", &memOffsets{err: errors.New("database down")}, 0, "group"},
		// Past the end of the log (say, a topic recreated under the same
		// cluster): out of range, so the partition restarts at earliest.
		{"stored position out of range", stored(500, b.ClusterID()), 0, "reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &testSink{release: true}
			h := startReader(t, b, "restart-"+strings.ReplaceAll(tc.name, " ", "-"), tc.offsets, sink)
			want := total - int(tc.wantFirst)
			// The partition is handed on in order: once its last message
			// is, every extra bundle a wrong start would add is too.
			waitFor(t, waitTimeout, "the last message", func() bool { return handedOn(sink, 0, total-1) })
			got := sink.snapshot()
			if len(got) != want || got[0].Origin.Offset != tc.wantFirst {
				t.Fatalf("read %d bundles starting at offset %d, want %d from %d", len(got), got[0].Origin.Offset, want, tc.wantFirst)
			}
			if got[0].Version.Generation != uint64(tc.wantFirst) {
				t.Errorf("first bundle is generation %d, want %d", got[0].Version.Generation, tc.wantFirst)
			}
			if tc.name == "stored position out of range" {
				if v := counterValue(t, h.registry, "stb_transport_offset_out_of_range_total", nil); v != 1 {
					t.Errorf("stb_transport_offset_out_of_range_total = %v, want 1", v)
				}
			}
			if v := counterValue(t, h.registry, "stb_transport_assignments_total", map[string]string{"start": tc.wantStart}); v != 1 {
				t.Errorf("stb_transport_assignments_total{start=%q} = %v, want 1", tc.wantStart, v)
			}
			if err := h.committer.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if p, ok := h.store.get("status", 0); !ok || p.Offset != total || p.ClusterID != b.ClusterID() {
				t.Errorf("committed %+v, want offset %d of %s", p, total, b.ClusterID())
			}
		})
	}
}

// TestReaderCloseStopsRun checks that Close ends a running Run with nil,
// can be called twice, and that Run on a closed reader fails.
func TestReaderCloseStopsRun(t *testing.T) {
	b := startBroker(t, 1)
	h := startReader(t, b, "close", &memOffsets{}, &testSink{})
	waitFor(t, waitTimeout, "an assignment", func() bool {
		_, ok := lookup(h.committer, "status", 0)
		return ok
	})
	if err := h.reader.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case err := <-h.runErr:
		if err != nil {
			t.Errorf("Run returned %v after Close, want nil", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return after Close")
	}
	h.cancel()
	h.cancel = nil
	if err := h.reader.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if err := h.reader.Run(context.Background()); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Run after Close = %v, want ErrClosed", err)
	}
}

// TestReaderCloseBeforeKafkaAnswers closes a reader whose brokers never
// answer: Run must give up waiting for the cluster id and return nil.
func TestReaderCloseBeforeKafkaAnswers(t *testing.T) {
	b := startBroker(t, 1)
	addr := b.Addr()
	b.Close() // nothing listens there any more
	cm, err := committer.New(committer.Config{Interval: time.Hour}, committer.Deps{Store: &memStore{}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := transport.DefaultConfig()
	cfg.Brokers, cfg.Topics = addr, []string{"status"}
	r, err := transport.NewReader(cfg, transport.Deps{
		Decoder: testDecoders(), Sink: &testSink{}, Positions: positions{cm}, Offsets: &memOffsets{},
	})
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- r.Run(context.Background()) }()
	time.Sleep(100 * time.Millisecond)
	if err := r.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	select {
	case err := <-runErr:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return after Close")
	}
}

// TestReaderFallsBackToGroupOffset checks that when the stored positions
// cannot be loaded the reader starts at the consumer group's committed
// offset, which the reader keeps up with the stored positions, rather
// than replaying the topic.
func TestReaderFallsBackToGroupOffset(t *testing.T) {
	b := startBroker(t, 1)
	pub := newPublisher(t, b.Addr())
	ctx := context.Background()
	publish := func(from, to uint64) {
		t.Helper()
		for g := from; g < to; g++ {
			env := validEnvelope("status", "hub-g")
			env.Version = bundle.Version{Incarnation: 1, Generation: g}
			if err := pub.Publish(ctx, env); err != nil {
				t.Fatal(err)
			}
		}
		if err := pub.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	publish(0, 5)

	first := &testSink{release: true}
	h := startReader(t, b, "fallback", &memOffsets{}, first)
	waitFor(t, waitTimeout, "5 bundles", func() bool { return len(first.snapshot()) == 5 })
	if err := h.committer.Commit(ctx); err != nil { // the group follows when the reader stops
		t.Fatal(err)
	}
	h.stop(t)

	publish(5, 7)
	second := &testSink{release: true}
	h2 := startReader(t, b, "fallback", &memOffsets{err: errors.New("database down")}, second)
	// In order: a replay from earlier would be handed on before offset 6.
	waitFor(t, waitTimeout, "the last message", func() bool { return handedOn(second, 0, 6) })
	got := second.snapshot()
	if len(got) != 2 || got[0].Origin.Offset != 5 {
		t.Fatalf("read %d bundles from offset %d, want 2 from offset 5", len(got), got[0].Origin.Offset)
	}
	if v := counterValue(t, h2.registry, "stb_transport_assignments_total", map[string]string{"start": "group"}); v != 1 {
		t.Errorf("stb_transport_assignments_total{start=group} = %v, want 1", v)
	}
}

// TestReaderRevocationWaitsForQueuedMessages: when partitions are revoked,
// the messages the poll loop has already queued for the decoding goroutine
// are handed on first, and the final position is committed behind them, so
// that whoever reads the partition next starts exactly where this reader
// stopped: no message handled twice, none skipped. Regression test for the
// decode queue: committing without draining it left the queued messages to
// be handed on after the revocation and read again by the next owner.
func TestReaderRevocationWaitsForQueuedMessages(t *testing.T) {
	b := startBroker(t, 2)
	pub := newPublisher(t, b.Addr())
	ctx := context.Background()
	const total = 400
	for i := range total {
		env := validEnvelope("status", fmt.Sprintf("hub-%d", i%8))
		env.ID = fmt.Sprintf("e-%d", i)
		env.Version = bundle.Version{Incarnation: 1, Generation: uint64(i + 1)}
		if err := pub.Publish(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// A slow sink keeps the decode queue full while the group rebalances.
	first := &testSink{release: true, delay: 25 * time.Millisecond}
	store := &memStore{}
	a := startReaderWith(t, b, "handoff", store, first, store)
	waitFor(t, waitTimeout, "the first reader to hand on a few bundles", func() bool { return len(first.snapshot()) >= 10 })

	// A second member makes the group (cooperative-sticky) move one of the
	// two partitions from the first to it.
	second := &testSink{release: true}
	startReaderWith(t, b, "handoff", store, second, &memStore{})
	waitFor(t, waitTimeout, "the revocation's final commit", func() bool { return store.count() > 0 })
	waitFor(t, waitTimeout, "every message to be handed on", func() bool {
		return len(first.snapshot())+len(second.snapshot()) >= total
	})
	// A duplicate is a message read again by the partition's new owner,
	// before the messages after it: one marker more per hub (so on both
	// partitions), once handed on, says every duplicate would have been.
	for i := range 8 {
		env := validEnvelope("status", fmt.Sprintf("hub-%d", i))
		env.ID = fmt.Sprintf("marker-%d", i)
		env.Version = bundle.Version{Incarnation: 1, Generation: uint64(total + 1 + i)}
		if err := pub.Publish(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	isMarker := func(bd *bundle.Bundle) bool { return bd.Version.Generation > total }
	waitFor(t, waitTimeout, "the markers to be handed on", func() bool {
		n := 0
		for _, bd := range append(first.snapshot(), second.snapshot()...) {
			if isMarker(bd) {
				n++
			}
		}
		return n >= 8
	})
	a.stop(t)

	type at struct {
		partition int32
		offset    int64
	}
	seen := map[at]int{}
	for _, bd := range append(first.snapshot(), second.snapshot()...) {
		if !isMarker(bd) {
			seen[at{bd.Origin.Partition, bd.Origin.Offset}]++
		}
	}
	if len(seen) != total {
		t.Errorf("%d distinct messages handed on, want %d", len(seen), total)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("partition %d offset %d handed on %d times, want once", k.partition, k.offset, n)
		}
	}
	t.Logf("after the revocation the first reader had handed on %d bundles, the second %d",
		len(first.snapshot()), len(second.snapshot()))
}

// TestReaderDecoderPanic: a decoder that panics on one message (a bug of
// the bridge's) no longer stops the bridge: the message is rejected with
// decode_panic, once, and the messages after it are read (issue 21: with
// no recover, every restart read it again and died again).
func TestReaderDecoderPanic(t *testing.T) {
	b := startBroker(t, 1)
	pub := newPublisher(t, b.Addr())
	ctx := context.Background()
	for i, typ := range []string{"heartbeat", panicType, "heartbeat"} {
		env := validEnvelope("status", "hub-a")
		env.Version = bundle.Version{Incarnation: 1, Generation: uint64(i + 1)}
		env.Type = typ
		if err := pub.PublishMessage(ctx, mustEncode(t, env)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sink := &testSink{}
	h := startReader(t, b, "panics", &memOffsets{}, sink)
	waitFor(t, waitTimeout, "the three messages to be read", func() bool {
		return len(sink.snapshot())+len(h.rejects.snapshot()) == 3
	})
	rejects := h.rejects.snapshot()
	if len(rejects) != 1 || rejects[0].Reason != deadletter.DecodePanic || rejects[0].Origin.Offset != 1 {
		t.Fatalf("rejects %+v, want the message at offset 1 as %s", rejects, deadletter.DecodePanic)
	}
	if got := originsOf(sink.snapshot()); len(got) != 2 || got[0].Offset != 0 || got[1].Offset != 2 {
		t.Errorf("bundles from %v, want offsets 0 and 2", got)
	}
	if n := counterValue(t, h.registry, "stb_transport_rejected_total", map[string]string{"reason": string(deadletter.DecodePanic)}); n != 1 {
		t.Errorf("stb_transport_rejected_total{reason=decode_panic} = %v, want 1", n)
	}
}

// handedOn reports whether sink was handed the message at offset of
// partition of "status".
func handedOn(sink *testSink, partition int32, offset int64) bool {
	for _, b := range sink.snapshot() {
		if b.Origin.Partition == partition && b.Origin.Offset == offset {
			return true
		}
	}
	return false
}
