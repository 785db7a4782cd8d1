package test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const poisonTypePrefix = "io.stb.status.v1."

// poisonCase is one bad message and the dead-letter reason it must get.
// Reasons are those of pkg/deadletter/reason.go. atWrite marks a message
// the reader takes (its envelope is good) whose data a worker decodes and
// dead-letters when it takes it.
type poisonCase struct {
	name    string
	reason  string
	rec     *kgo.Record
	atWrite bool
}

// recordOpt changes a record built by ceRecord.
type recordOpt func(r *kgo.Record)

// ceRecord builds a valid CloudEvents 1.0 binary-mode record of a bundle,
// keyed by hub, and applies opts to it.
func ceRecord(id, hub, typ, version string, data []byte, opts ...recordOpt) *kgo.Record {
	r := &kgo.Record{
		Key:   []byte(hub),
		Value: data,
		Headers: []kgo.RecordHeader{
			{Key: "ce_specversion", Value: []byte("1.0")},
			{Key: "ce_id", Value: []byte(id)},
			{Key: "ce_source", Value: []byte(hub)},
			{Key: "ce_type", Value: []byte(poisonTypePrefix + typ)},
			{Key: "ce_time", Value: []byte(time.Now().UTC().Format(time.RFC3339Nano))},
			{Key: "ce_extversion", Value: []byte(version)},
			{Key: "content-type", Value: []byte("application/json")},
		},
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

func withHeader(k, v string) recordOpt {
	return func(r *kgo.Record) {
		for i := range r.Headers {
			if r.Headers[i].Key == k {
				r.Headers[i].Value = []byte(v)
				return
			}
		}
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
}

func withoutHeader(k string) recordOpt {
	return func(r *kgo.Record) {
		r.Headers = slices.DeleteFunc(r.Headers, func(h kgo.RecordHeader) bool { return h.Key == k })
	}
}

func withRecordKey(k []byte) recordOpt { return func(r *kgo.Record) { r.Key = k } }

// heartbeatOfSize returns a valid heartbeat payload of exactly n bytes
// (n ≥ 32): agents may add members, and the bridge ignores them.
func heartbeatOfSize(n int) []byte {
	const head, tail = `{"objects":[],"pad":"`, `"}`
	return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
}

// managedClustersOfSize returns a valid managedclusters payload of exactly
// n bytes whose clusters are named prefix-000, prefix-001, … .
func managedClustersOfSize(prefix string, clusters, n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"objects":[`)
	for i := range clusters {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster",`+
			`"metadata":{"name":"%s-%03d","uid":"00000000-0000-4000-8000-%012d","labels":{"vendor":"OpenShift"}},`+
			`"status":{"conditions":[{"type":"ManagedClusterConditionAvailable","status":"True"}]}}`, prefix, i, i)
	}
	const padHead, tail = `],"pad":"`, `"}`
	b.WriteString(padHead)
	b.WriteString(strings.Repeat("p", n-b.Len()-len(tail)))
	b.WriteString(tail)
	return b.Bytes()
}

// randomName returns n random lower-case letters and digits: a string
// PostgreSQL cannot compress below its index row limit.
func randomName(rng *rand.Rand, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

// poisonCorpus returns the bad messages. Many name real simulated hubs and
// versions far newer than any the simulation sends, so that one accepted
// by mistake would also show as a mismatch in stb verify.
func poisonCorpus() []poisonCase {
	garbage := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.UintN(256))
	}
	const (
		hub = "hub-003"
		v   = "99.1" // newer than anything the simulation sends
	)
	hb := []byte(`{}`)
	n := 0
	c := func(name, reason string, build func(id string) *kgo.Record) poisonCase {
		n++
		rec := build(fmt.Sprintf("poison-%02d", n))
		return poisonCase{name: name, reason: reason, rec: rec, atWrite: strings.HasPrefix(string(rec.Key), "hub-x-")}
	}
	hbWith := func(opts ...recordOpt) func(string) *kgo.Record {
		return func(id string) *kgo.Record { return ceRecord(id, hub, "heartbeat", v, hb, opts...) }
	}
	typed := func(typ string, data string, opts ...recordOpt) func(string) *kgo.Record {
		return func(id string) *kgo.Record { return ceRecord(id, hub, typ, v, []byte(data), opts...) }
	}
	bare := func(key, value []byte, headers ...kgo.RecordHeader) func(string) *kgo.Record {
		return func(string) *kgo.Record { return &kgo.Record{Key: key, Value: value, Headers: headers} }
	}
	// Bad data is read as a bundle and decoded when a worker takes it;
	// a newer bundle of its hub and type would replace it unread (and it
	// would replace an unwritten older one), so each goes to a hub of its
	// own, which the simulation does not know: none is replaced, and
	// should one be written it would show as a hub verify does not expect.
	badData := func(typ string, data string, opts ...recordOpt) func(string) *kgo.Record {
		return func(id string) *kgo.Record { return ceRecord(id, "hub-x-"+id, typ, v, []byte(data), opts...) }
	}
	versioned := func(version string) func(string) *kgo.Record {
		return hbWith(withHeader("ce_extversion", version))
	}
	huge := strings.Repeat("h", 1<<20)

	return []poisonCase{
		// Not a CloudEvent at all.
		c("plain text, no headers", "not_cloudevent", bare([]byte(hub), []byte("this is not a cloudevent"))),
		c("binary garbage, no headers", "not_cloudevent", bare([]byte(hub), garbage)),
		c("empty record", "not_cloudevent", bare(nil, nil)),
		c("binary garbage in key, headers and value", "not_cloudevent", bare(garbage[:64], garbage,
			kgo.RecordHeader{Key: "ce_specversion", Value: garbage[64:80]},
			kgo.RecordHeader{Key: "ce_id", Value: garbage[80:96]})),
		c("specversion 0.3", "not_cloudevent", hbWith(withHeader("ce_specversion", "0.3"))),
		c("specversion 2.0", "not_cloudevent", hbWith(withHeader("ce_specversion", "2.0"))),
		c("no specversion header", "not_cloudevent", hbWith(withoutHeader("ce_specversion"))),
		c("unparsable time", "not_cloudevent", hbWith(withHeader("ce_time", "yesterday"))),
		c("invalid extension name", "not_cloudevent", hbWith(withHeader("ce_bad-name", "x"))),
		c("structured content type over binary headers", "not_cloudevent",
			hbWith(withHeader("content-type", "application/cloudevents+json"))),
		c("structured mode, truncated JSON", "not_cloudevent", bare([]byte(hub),
			[]byte(`{"specversion":"1.0","id":"x","source":"hub-003","type":"io.stb.status.v1.heartbeat","data":{"obj`),
			kgo.RecordHeader{Key: "content-type", Value: []byte("application/cloudevents+json")})),

		// A required attribute missing.
		c("missing id", "missing_attribute", hbWith(withoutHeader("ce_id"))),
		c("missing source", "missing_attribute", hbWith(withoutHeader("ce_source"))),
		c("missing type", "missing_attribute", hbWith(withoutHeader("ce_type"))),
		c("missing extversion", "missing_attribute", hbWith(withoutHeader("ce_extversion"))),

		// Types the bridge does not know.
		c("unknown bundle type", "unknown_type", hbWith(withHeader("ce_type", poisonTypePrefix+"nosuchtype"))),
		c("foreign type prefix", "unknown_type", hbWith(withHeader("ce_type", "com.example.heartbeat"))),
		c("bare type prefix", "unknown_type", hbWith(withHeader("ce_type", poisonTypePrefix))),
		c("type in the wrong case", "unknown_type", hbWith(withHeader("ce_type", poisonTypePrefix+"Heartbeat"))),
		c("1 MiB type", "unknown_type", hbWith(withHeader("ce_type", poisonTypePrefix+huge))),
		c("NUL byte in the type", "unknown_type", hbWith(withHeader("ce_type", poisonTypePrefix+"heart\x00beat"))),

		// Versions that are not "<uint64>.<uint64>".
		c("version not numeric", "malformed_version", versioned("a.b")),
		c("negative incarnation", "malformed_version", versioned("-1.2")),
		c("negative generation", "malformed_version", versioned("1.-2")),
		c("incarnation overflows uint64", "malformed_version", versioned("18446744073709551616.0")),
		c("generation overflows uint64", "malformed_version", versioned("1.18446744073709551616")),
		c("version without generation", "malformed_version", versioned("7")),
		c("version with three parts", "malformed_version", versioned("1.2.3")),
		c("empty version", "malformed_version", versioned("")),
		c("100,000-digit version", "malformed_version", versioned(strings.Repeat("9", 100_000)+".1")),
		c("malformed dependency version", "malformed_version",
			typed("compliance", `{"objects":[]}`, withHeader("ce_extdependencyversion", "x"))),
		c("negative dependency version", "malformed_version",
			typed("compliancedelta", `{"objects":[]}`, withHeader("ce_extdependencyversion", "-3.1"))),

		// Data over --max-bundle-bytes (64 KiB in this test).
		c("5 MiB heartbeat", "too_large", func(id string) *kgo.Record {
			return ceRecord(id, hub, "heartbeat", v, heartbeatOfSize(5<<20))
		}),
		c("64 KiB + 1 byte managedclusters", "too_large", func(id string) *kgo.Record {
			return ceRecord(id, hub, "managedclusters", v, managedClustersOfSize("too-large", 50, 64<<10+1))
		}),

		// One hub writing as another.
		c("source is another hub", "source_mismatch", hbWith(withRecordKey([]byte("hub-004")))),
		c("no key", "source_mismatch", hbWith(withRecordKey(nil))),
		c("key in another case", "source_mismatch", hbWith(withRecordKey([]byte("HUB-003")))),
		// A hub name is at most 253 bytes (a Kubernetes object name).
		c("1 MiB source", "invalid_hub", hbWith(withHeader("ce_source", huge))),
		c("source with a control character", "invalid_hub", hbWith(withHeader("ce_source", "hub-001\x1b[2J"), withRecordKey([]byte("hub-001\x1b[2J")))),

		// Data that does not decode into the type's payload: dead-lettered
		// when a worker takes it, at its offset. Read, it is a bundle like
		// any other, held until written.
		// Not JSON at all: found by a scan when read (issue 34, item 10).
		c("truncated JSON", "bad_payload", typed("managedclusters", `{"objects":[{"metadata":{"name":"c`)),
		c("objects is an object", "bad_payload", badData("managedclusters", `{"objects":{}}`)),
		c("objects is a string", "bad_payload", badData("heartbeat", `{"objects":"none"}`)),
		c("managed cluster without metadata.name", "bad_payload",
			badData("managedclusters", `{"objects":[{"metadata":{"uid":"u-1","labels":{}}}]}`)),
		c("managed cluster with an empty name", "bad_payload",
			badData("managedclusters", `{"objects":[{"metadata":{"name":""}}]}`)),
		c("metadata.name is a number", "bad_payload", badData("managedclusters", `{"objects":[{"metadata":{"name":42}}]}`)),
		c("managedclusters without objects", "bad_payload", badData("managedclusters", `{}`)),
		c("JSON null", "bad_payload", badData("managedclusters", `null`)),
		c("JSON array", "bad_payload", badData("heartbeat", `[]`)),
		c("no data", "bad_payload", badData("managedclusters", ``)),
		c("binary garbage as data", "bad_payload", func(id string) *kgo.Record {
			return ceRecord(id, hub, "managedclusters", v, garbage) // not JSON: rejected when read
		}),
		c("event time not a time", "bad_payload", badData("policyevents",
			`{"objects":[{"policyId":"p","clusterName":"c","eventName":"e","reason":"r","message":"m","time":"noon"}]}`)),
		// Bad data of a type that waits for another: its hub never sent
		// what it waits for, so it is never decoded, and is dead-lettered
		// when it has waited --dependency-timeout.
		c("policyId is a number", "dependency_timeout", badData("compliance", `{"objects":[{"policyId":5}]}`,
			withHeader("ce_extdependencyversion", "1.1"))),
		c("clusters is a string", "dependency_timeout",
			badData("clusterspolicies", `{"objects":[{"policyId":"p","clusters":"c1"}]}`)),
		c("NUL in a compliance cluster name", "dependency_timeout", badData("compliance",
			`{"objects":[{"policyId":"p","nonCompliantClusters":["c\u0000x"]}]}`, withHeader("ce_extdependencyversion", "1.1"))),
		// Valid JSON, but no ManagedCluster can have such a name, and
		// PostgreSQL can store neither: the decoders check key columns
		// (dbsyncers checkName) so that such data is a bad_payload dead
		// letter rather than a failing transaction.
		c("NUL in a managed cluster name", "bad_payload", badData("managedclusters", `{"objects":[{"metadata":{"name":"c\u0000x"}}]}`)),
		c("30,000-character managed cluster name", "bad_payload",
			badData("managedclusters", `{"objects":[{"metadata":{"name":"`+randomName(rng, 30_000)+`"}}]}`)),
	}
}

// TestPoisonCorpus mixes bad messages of every kind into the stream of
// simulated hubs on one partition. Each must become exactly one dead letter
// with its reason at its offset, counted by reason in
// stb_transport_rejected_total (rejected when read) or
// stb_dispatcher_dead_letters_total (data that does not decode, found when
// a worker decodes it); valid traffic — including a 64 KiB bundle at the
// --max-bundle-bytes limit — must be applied and pass stb verify; the
// committed offset must reach the end of the partition; and the bridge
// must keep running throughout.
func TestPoisonCorpus(t *testing.T) {
	e := newEnv(t, 1)
	// The smallest limit the bridge may have: the 64 KiB every hub is
	// promised. Bad data that waits for a dependency its hub never sends
	// is dead-lettered after the dependency timeout.
	const dependencyTimeout = 10 * time.Second
	b := e.startBridge("--max-bundle-bytes", "64KiB", "--dependency-timeout", dependencyTimeout.String())
	cl := e.producer()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// A 64 KiB managedclusters bundle, exactly at the limit, must be
	// accepted and written. It is older (incarnation 0) than anything the
	// simulation sends, which later replaces it.
	big := ceRecord("valid-64k", "hub-001", "managedclusters", "0.1", managedClustersOfSize("big", 100, 64<<10))
	if len(big.Value) != 64<<10 {
		t.Fatalf("64 KiB bundle is %d bytes", len(big.Value))
	}
	if err := cl.ProduceSync(ctx, big).FirstErr(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM stb.managed_clusters WHERE hub = 'hub-001' AND cluster_name LIKE 'big-%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if v := e.versions()["hub-001/managedclusters"]; n == 100 && v == [2]uint64{0, 1} {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the 64 KiB bundle was not written within a minute: %d of its 100 clusters, version %v",
				n, e.versions()["hub-001/managedclusters"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("64 KiB managedclusters bundle (offset %d) written: 100 clusters, version 0.1", big.Offset)

	// The bad messages go out one by one while 20 hubs publish, so that
	// they are scattered through the valid stream; the last ones after
	// the simulation, so that the partition ends with bad messages.
	cases := poisonCorpus()
	sim := e.simulateAsync("poison", "--hubs", "20", "--clusters", "10", "--generations", "12",
		"--rate", "120", "--seed", "41")
	const tailCases = 3
	byOffset := map[int64]*poisonCase{}
	produce := func(pc *poisonCase) {
		if err := cl.ProduceSync(ctx, pc.rec).FirstErr(); err != nil {
			t.Fatalf("producing %q: %v", pc.name, err)
		}
		byOffset[pc.rec.Offset] = pc
	}
	for i := range cases[:len(cases)-tailCases] {
		produce(&cases[i])
		time.Sleep(100 * time.Millisecond)
	}
	exp := sim.wait(t, 2*time.Minute)
	for i := len(cases) - tailCases; i < len(cases); i++ {
		produce(&cases[i])
	}
	if len(byOffset) != len(cases) {
		t.Fatalf("%d cases produced at %d distinct offsets", len(cases), len(byOffset))
	}
	want := map[string]int{}
	amidValid := 0 // bad messages right after a valid one
	for _, pc := range cases {
		want[pc.reason]++
		if byOffset[pc.rec.Offset-1] == nil && pc.rec.Offset > big.Offset+1 {
			amidValid++
		}
	}
	t.Logf("%d bad messages of %d reasons, %d of them right after valid traffic: %v", len(cases), len(want), amidValid, want)
	if amidValid < len(cases)/2 {
		t.Fatalf("only %d of %d bad messages follow valid traffic: they were not mixed into the stream", amidValid, len(cases))
	}

	e.waitVerified(exp, 2*time.Minute)
	end := e.highWatermarks()
	if last := cases[len(cases)-1].rec.Offset; end[0] != last+1 {
		t.Fatalf("partition ends at %d, but the last bad message is at %d", end[0], last)
	}
	// Every message has been read once the reader's count reaches the
	// end of the partition; a reject's dead letter is stored before the
	// next message is read. Dead letters of the workers (data that does
	// not decode, a write that failed for good, a dependency that never
	// came) come later, so wait for one per case.
	waitMessagesRead(t, b, end[0], time.Minute)
	var letters map[int64][]deadLetterRow
	deadline = time.Now().Add(dependencyTimeout + 20*time.Second)
	for {
		letters = e.deadLettersByOffset()
		missing := 0
		for _, pc := range cases {
			if len(letters[pc.rec.Offset]) == 0 {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Exactly one dead letter per bad message, at its offset, with its
	// reason; none for valid traffic.
	for _, pc := range cases {
		ls := letters[pc.rec.Offset]
		switch {
		case len(ls) == 0:
			t.Errorf("%s (offset %d): no dead letter, want reason %s", pc.name, pc.rec.Offset, pc.reason)
		case len(ls) > 1:
			t.Errorf("%s (offset %d): %d dead letters, want one", pc.name, pc.rec.Offset, len(ls))
		case ls[0].reason != pc.reason || ls[0].topic != "status" || ls[0].partition != 0:
			t.Errorf("%s (offset %d): dead letter %s/%d reason %s (%.300s), want status/0 reason %s",
				pc.name, pc.rec.Offset, ls[0].topic, ls[0].partition, ls[0].reason, ls[0].error, pc.reason)
		}
	}
	for off, ls := range letters {
		if byOffset[off] == nil {
			t.Errorf("dead letter for valid traffic at offset %d: reason %s: %.300s", off, ls[0].reason, ls[0].error)
		}
	}

	m, err := b.scrape()
	if err != nil {
		t.Fatal(err)
	}
	read, written := map[string]int{}, map[string]int{}
	for _, pc := range cases {
		if pc.atWrite {
			written[pc.reason]++
		} else {
			read[pc.reason]++
		}
	}
	for reason := range want {
		if got := m.sumWith("stb_transport_rejected_total", "reason", reason); got != float64(read[reason]) {
			t.Errorf("stb_transport_rejected_total{reason=%q} = %v, want %d", reason, got, read[reason])
		}
		if got := m.sumWith("stb_dispatcher_dead_letters_total", "reason", reason); got != float64(written[reason]) {
			t.Errorf("stb_dispatcher_dead_letters_total{reason=%q} = %v, want %d", reason, got, written[reason])
		}
	}
	// After the checks above, so that a message that pins the committed
	// offset is reported by name first.
	e.waitOffsets(end, 30*time.Second)
	t.Logf("committed offset reached the end of the partition: %d", end[0])
	if !b.running() {
		t.Fatalf("the bridge exited: %v", b.err)
	}
	b.stop(30 * time.Second)
}

// waitMessagesRead waits until the bridge has read n messages.
func waitMessagesRead(t *testing.T, b *bridge, n int64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		m, err := b.scrape()
		if err != nil {
			t.Fatal(err)
		}
		read, _ := m.sum("stb_transport_messages_total")
		if int64(read) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bridge read %v of %d messages within %v", read, n, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deadLetterRow is a row of stb.dead_letters.
type deadLetterRow struct {
	partition     int32
	topic         string
	reason, error string
}

// deadLettersByOffset returns stb.dead_letters by offset.
func (e *env) deadLettersByOffset() map[int64][]deadLetterRow {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT "offset", "partition", topic, reason, error FROM stb.dead_letters ORDER BY id`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64][]deadLetterRow{}
	for rows.Next() {
		var off int64
		var l deadLetterRow
		if err := rows.Scan(&off, &l.partition, &l.topic, &l.reason, &l.error); err != nil {
			e.t.Fatal(err)
		}
		out[off] = append(out[off], l)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}
