package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/broker"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
)

// TestProducedAheadCarryTheTimeSent: a message built ahead decodes, as the
// bridge decodes it, to the bundle the simulation made, with the time it
// was stamped with when sent rather than when it was built.
func TestProducedAheadCarryTheTimeSent(t *testing.T) {
	var built encoded
	cfg := sim.Config{Hubs: 3, Clusters: 2, Generations: 2, Topic: "status", Seed: 7}
	exp, err := sim.Run(context.Background(), cfg, &built, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(built.msgs) != exp.Messages || exp.Messages == 0 {
		t.Fatalf("built %d messages, the simulation sent %d", len(built.msgs), exp.Messages)
	}
	reg := dbsyncers.Default()
	d := transport.Decoders{}
	for _, ti := range reg.Types() {
		s, _ := reg.Lookup(ti.Name)
		d[ti.Name] = s.Decode
	}
	rules := transport.Rules{TypePrefix: transport.DefaultTypePrefix, VerifySource: true, MaxBundleBytes: transport.MinMaxBundleBytes, Decoder: d}
	sent := time.Now().Add(time.Hour).Round(time.Microsecond)
	for i, msg := range built.msgs {
		stampTime(msg, sent)
		topic := "status"
		msg.TopicPartition.Topic, msg.TopicPartition.Partition, msg.TopicPartition.Offset = &topic, 0, 0
		b, rej := transport.Decode(msg, rules, time.Now())
		if rej != nil {
			t.Fatalf("message %d rejected: %s: %v", i, rej.Reason, rej.Err)
		}
		if !b.EventTime.Equal(sent) {
			t.Fatalf("message %d (%s of %s): event time %v, want the time it was sent, %v", i, b.Type, b.Hub, b.EventTime, sent)
		}
	}
}

// TestSplitSim: a load split over n producers keeps its hubs and its rate
// in all, each part with hubs of its own; never more parts than hubs.
func TestSplitSim(t *testing.T) {
	base := sim.Config{Hubs: 10, Rate: 900, Seed: 5, Generations: 3, Topic: "t"}
	for name, tc := range map[string]struct {
		hubs, n  int
		wantHubs []int
	}{
		"one":               {10, 1, []int{10}},
		"zero is one":       {10, 0, []int{10}},
		"even":              {10, 2, []int{5, 5}},
		"uneven":            {10, 3, []int{4, 3, 3}},
		"more than hubs":    {2, 5, []int{1, 1}},
		"as many as hubs":   {3, 3, []int{1, 1, 1}},
		"one hub, two asks": {1, 2, []int{1}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := base
			cfg.Hubs = tc.hubs
			parts := splitSim(cfg, tc.n)
			var hubs []int
			var rate float64
			prefixes := map[string]bool{}
			seeds := map[int64]bool{}
			for _, p := range parts {
				hubs = append(hubs, p.Hubs)
				rate += p.Rate
				prefixes[p.HubPrefix], seeds[p.Seed] = true, true
				if p.Generations != cfg.Generations || p.Topic != cfg.Topic {
					t.Errorf("part %+v changed more than hubs, rate, seed and prefix", p)
				}
			}
			if !slices.Equal(hubs, tc.wantHubs) {
				t.Errorf("hubs %v, want %v", hubs, tc.wantHubs)
			}
			if rate != cfg.Rate {
				t.Errorf("rates add up to %v, want %v", rate, cfg.Rate)
			}
			if len(parts) == 1 {
				if parts[0] != cfg {
					t.Errorf("one part %+v, want the simulation itself %+v", parts[0], cfg)
				}
				return
			}
			if len(prefixes) != len(parts) || len(seeds) != len(parts) {
				t.Errorf("prefixes %v and seeds %v: want one of each per part", prefixes, seeds)
			}
		})
	}
}

// TestProducerProgress: the parent reads the child's progress lines;
// anything else it prints is ignored.
func TestProducerProgress(t *testing.T) {
	for name, tc := range map[string]struct {
		lines    []string
		sent     int64
		ready    bool
		finished bool
	}{
		"nothing":           {nil, 0, false, false},
		"sent":              {[]string{"sent 3", "sent 7"}, 7, false, false},
		"done":              {[]string{"sent 3", "done 9"}, 9, false, true},
		"ahead":             {[]string{"ready 9", "sent 4", "done 9"}, 9, true, true},
		"ready twice":       {[]string{"ready 9", "ready 9"}, 0, true, false},
		"noise":             {[]string{"hello", "sent", "sent x", "done -", "librdkafka: 3 messages"}, 0, false, false},
		"unknown word":      {[]string{"queued 5"}, 0, false, false},
		"done without sent": {[]string{"done 1"}, 1, false, true},
	} {
		t.Run(name, func(t *testing.T) {
			p := &benchProducer{ready: make(chan struct{})}
			for _, l := range tc.lines {
				p.progress(l)
			}
			if p.Sent() != tc.sent || p.finished.Load() != tc.finished {
				t.Errorf("sent %d, finished %v; want %d, %v", p.Sent(), p.finished.Load(), tc.sent, tc.finished)
			}
			select {
			case <-p.ready:
				if !tc.ready || p.readyAt.IsZero() {
					t.Errorf("ready at %v, want ready %v", p.readyAt, tc.ready)
				}
			default:
				if tc.ready {
					t.Error("not ready")
				}
			}
		})
	}
}

// testBroker starts an embedded broker with topic, closed at the end of
// the test.
func testBroker(t *testing.T, partitions int32, topics ...string) string {
	t.Helper()
	b, err := broker.Start(broker.Config{Topics: topics, Partitions: partitions}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b.Addr()
}

// topicRecords reads the first n records of topic.
func topicRecords(t *testing.T, brokers, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestRunProducer: the producer process publishes its simulation in each
// of its modes, reports its progress in the lines the parent reads, and
// writes the expected state; the rejects of the poison modes are the
// simulation's messages made invalid, half of an unknown type, half bad
// data of poison hubs.
func TestRunProducer(t *testing.T) {
	for name, tc := range map[string]struct {
		spec produceSpec
		// perMessage is the records per simulated message; poisoned the
		// share of them that are rejects.
		perMessage int
		poisoned   float64
	}{
		"plain":      {produceSpec{}, 1, 0},
		"ahead":      {produceSpec{Ahead: true}, 1, 0},
		"poison":     {produceSpec{Poison: true}, 1, 1},
		"poison mix": {produceSpec{PoisonMix: true}, 2, 0.5},
	} {
		t.Run(name, func(t *testing.T) {
			const topic = "status"
			spec := tc.spec
			spec.Brokers = testBroker(t, 2, topic)
			spec.Sim = sim.Config{Hubs: 3, Clusters: 2, Generations: 4, Topic: topic, Seed: 3, Rate: 2000}
			spec.Expected = filepath.Join(t.TempDir(), "expected.json")
			in, err := jsonReader(spec)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := RunProducer(t.Context(), in, &out); err != nil {
				t.Fatal(err)
			}
			exp, err := sim.ReadExpected(spec.Expected)
			if err != nil {
				t.Fatal(err)
			}
			if exp.Messages == 0 || len(exp.Hubs) != 3 {
				t.Fatalf("expected state of %d messages and %d hubs", exp.Messages, len(exp.Hubs))
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if want := "done " + strconv.Itoa(exp.Messages); lines[len(lines)-1] != want {
				t.Errorf("last line %q, want %q", lines[len(lines)-1], want)
			}
			if want := "ready " + strconv.Itoa(exp.Messages); spec.Ahead != (lines[0] == want) {
				t.Errorf("first line %q; ahead %v", lines[0], spec.Ahead)
			}
			p := &benchProducer{ready: make(chan struct{})}
			for _, l := range lines {
				p.progress(l)
			}
			if !p.finished.Load() || p.Sent() != int64(exp.Messages) {
				t.Errorf("the parent reads sent %d, finished %v from %q", p.Sent(), p.finished.Load(), lines)
			}

			total := exp.Messages * tc.perMessage
			recs := topicRecords(t, spec.Brokers, topic, total)
			if len(recs) != total {
				t.Fatalf("%d records, want %d", len(recs), total)
			}
			var rejects, unknown int
			for _, r := range recs {
				if strings.HasSuffix(header(r, "ce_id"), "-poison") {
					rejects++
					if strings.HasSuffix(header(r, "ce_type"), "."+poisonType) {
						unknown++
					} else if !strings.HasSuffix(string(r.Key), poisonHub) || !strings.HasSuffix(header(r, "ce_type"), ".managedclusters") {
						// Bad data of a valid hub would replace its
						// unwritten valid bundle (decoded only when written).
						t.Errorf("bad data of hub %q, type %s: want managedclusters of a poison hub", r.Key, header(r, "ce_type"))
					}
				}
			}
			if want := int(tc.poisoned * float64(total)); rejects != want || unknown != rejects/2 {
				t.Errorf("%d rejects, %d of an unknown type; want %d and half", rejects, unknown, want)
			}
		})
	}
}

// TestRunProducerRejectsABadSpec: a spec the producer cannot follow fails
// it before it publishes anything.
func TestRunProducerRejectsABadSpec(t *testing.T) {
	for name, spec := range map[string]string{
		"not JSON":      `brokers=x`,
		"unknown field": `{"brokers":"127.0.0.1:1","expected":"/tmp/x","rate":5}`,
		"no brokers":    `{"expected":"/tmp/x"}`,
		"no file":       `{"brokers":"127.0.0.1:1"}`,
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			err := RunProducer(t.Context(), strings.NewReader(spec), &out)
			if err == nil || !strings.Contains(err.Error(), "producer spec") {
				t.Errorf("err %v, want a producer spec error", err)
			}
			if out.Len() > 0 {
				t.Errorf("printed %q", out.String())
			}
		})
	}
}

// TestStartProducers: producer processes, started as `stb bench` starts
// them, publish their shares of a load; the parent follows their counts,
// their CPU time, and merges their expected states.
func TestStartProducers(t *testing.T) {
	cmd := testProduceCmd(t)
	const topic = "status"
	brokers := testBroker(t, 2, topic)
	spec := produceSpec{Brokers: brokers, Sim: sim.Config{Hubs: 5, Clusters: 2, Generations: 3, Topic: topic, Seed: 9}}
	for _, ahead := range []bool{false, true} {
		spec.Ahead = ahead
		g, err := startProducers(cmd, spec, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.ps) != 2 {
			t.Fatalf("%d processes, want 2", len(g.ps))
		}
		exp, err := g.wait(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		<-g.done()
		if len(exp.Hubs) != 5 || g.Sent() != int64(exp.Messages) {
			t.Errorf("ahead %v: %d hubs, sent %d of %d messages; want 5 hubs, every message", ahead, len(exp.Hubs), g.Sent(), exp.Messages)
		}
		if g.cpu() <= 0 {
			t.Errorf("ahead %v: CPU time %v", ahead, g.cpu())
		}
		for _, p := range g.ps {
			if _, err := os.Stat(p.expected); !os.IsNotExist(err) {
				t.Errorf("the expected state file %s is left behind (%v)", p.expected, err)
			}
		}
	}
	if recs := topicRecords(t, brokers, topic, 1); len(recs) == 0 {
		t.Error("nothing published")
	}
}

// TestProducerFails: a producer that fails says why, from its stderr; one
// stopped before it finished is not taken as finished.
func TestProducerFails(t *testing.T) {
	cmd := testProduceCmd(t)
	brokers := testBroker(t, 1, "status")

	p, err := startProducer(cmd, produceSpec{Brokers: brokers, Sim: sim.Config{Hubs: 0, Topic: "status"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.wait(t.Context()); err == nil || !strings.Contains(err.Error(), "hubs must be at least 1") {
		t.Errorf("a bad simulation: %v, want the producer's own error", err)
	}

	// At one message a second for a minute: stopped long before the end.
	slow := produceSpec{Brokers: brokers, Sim: sim.Config{Hubs: 1, Generations: 60, Rate: 1, Duration: time.Minute, Topic: "status"}}
	g, err := startProducers(cmd, slow, 1)
	if err != nil {
		t.Fatal(err)
	}
	g.stop()
	select {
	case <-g.done():
	case <-time.After(30 * time.Second):
		t.Fatal("stop returned before the process exited")
	}
	if _, err := g.wait(t.Context()); err == nil {
		t.Error("a stopped producer's expected state was taken")
	}
	if _, err := os.Stat(g.ps[0].expected); !os.IsNotExist(err) {
		t.Errorf("stop left the expected state file %s behind (%v)", g.ps[0].expected, err)
	}
}

// jsonReader is spec as the parent writes it to the producer's stdin.
func jsonReader(spec produceSpec) (*bytes.Reader, error) {
	data, err := json.Marshal(spec)
	return bytes.NewReader(data), err
}
