package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/internal/humanize"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/transport"
)

// largeHubPoll is how often a variant's database is looked at while it
// ingests the large hub.
const largeHubPoll = 20 * time.Millisecond

// benchLargeHub: one hub of 3,000 clusters with 45 policies placed on all
// of them (135,000 compliance rows). Its heartbeat, managedclusters,
// clusterspolicies and first compliance report are in Kafka before a
// variant starts: the ingest runs from the variant's first message read
// to the last of the four written. Then, while it runs, the hub sends a
// compliance report that changes every row: the rotation runs from
// publishing it to its commit. Each bridge variant reads the backlog topic
// and a rotation topic of its own, so that no variant sees another's
// rotation.
func benchLargeHub(ctx context.Context, e *benchEnv, res *scenarioResult) error {
	res.Params["clusters"], res.Params["policies"], res.Params["complianceRows"] = largeHubClusters, largeHubPolicies, largeHubClusters*largeHubPolicies
	envs, err := largeHubEnvelopes()
	if err != nil {
		return err
	}
	pub, err := transport.NewPublisher(transport.PublisherConfig{Brokers: e.brokers}, e.logger)
	if err != nil {
		return err
	}
	defer pub.Close()
	topic := e.topic("largehub")
	for i := range 4 {
		envs[i].Topic = topic
		if err := pub.Publish(ctx, envs[i]); err != nil {
			return err
		}
	}
	if err := pub.Flush(ctx); err != nil {
		return err
	}
	res.note("backlog: heartbeat, managedclusters (%.1f MB), clusterspolicies (%.1f MB), compliance (%.1f MB); rotation: compliance (%.1f MB); --max-bundle-bytes %s for the bridge variants (the managedclusters bundle is above the default 4MiB)",
		float64(len(envs[1].Data))/1e6, float64(len(envs[2].Data))/1e6, float64(len(envs[3].Data))/1e6, float64(len(envs[4].Data))/1e6,
		humanize.Bytes(largeHubMaxBundleBytes))

	// c: reading and decoding the four bundles.
	st := newFinalState(e.reg)
	rd, err := readAndDecode(ctx, e.brokers, []string{topic}, e.group("stb_bench_largehub_read"), 4, e.decoder(largeHubMaxBundleBytes), st, nil)
	if err != nil {
		return err
	}
	decode := rd.Elapsed - rd.FirstMessage
	res.row("c", "read+decode ceiling").
		set("ingest", "ingestSeconds", decode.Seconds(), secs(decode)).
		Note = fmt.Sprintf("from the first message read to the fourth decoded; %s with the group join", secs(rd.Elapsed))

	// c: the same four messages read raw: polled and touched, nothing
	// decoded.
	raw, err := readRaw(ctx, e.brokers, []string{topic}, e.group("stb_bench_largehub_raw"), 4, nil)
	if err != nil {
		return err
	}
	rawRead := raw.Elapsed - raw.FirstMessage
	res.row("c", "raw read ceiling").
		set("ingest", "ingestSeconds", rawRead.Seconds(), secs(rawRead)).
		Note = fmt.Sprintf("the same, polled and touched, nothing decoded; %s with the group join", secs(raw.Elapsed))

	// c: the same bundles written straight: the ingest, then the rotation.
	ingestRows := int64(largeHubClusters + 2*largeHubClusters*largeHubPolicies) // inserts, then every compliance set
	rotRows := int64(largeHubClusters * largeHubPolicies)
	pgxIngest, pgxRot, err := e.largeHubPGX(ctx, st, envs[4])
	if err != nil {
		return err
	}
	res.row("c", "pgx ceiling").
		set("ingest", "ingestSeconds", pgxIngest.Seconds(), secs(pgxIngest)).
		set("ingest rows/s", "ingestRowsPerSecond", float64(ingestRows)/pgxIngest.Seconds(), perSecond(float64(ingestRows), pgxIngest)).
		set("rotation", "rotationSeconds", pgxRot.Seconds(), secs(pgxRot)).
		set("rotation rows/s", "rotationRowsPerSecond", float64(rotRows)/pgxRot.Seconds(), perSecond(float64(rotRows), pgxRot)).
		Note = "Registry.Write, no Kafka"

	var stb largeHubRun
	for _, v := range []struct {
		role, name, db string
		conflation     bool
	}{
		{"a", "stb (conflation)", "stb_bench_largehub_stb", true},
		{"b", "baseline (--conflation=false)", "stb_bench_largehub_baseline", false},
	} {
		rotTopic := e.topic("largehub-rotation-" + map[bool]string{true: "stb", false: "baseline"}[v.conflation])
		r, err := e.largeHubVariant(ctx, v.db, v.conflation, []string{topic, rotTopic}, pub, envs[4], rotTopic)
		if err != nil {
			return err
		}
		res.row(v.role, v.name).
			set("ingest", "ingestSeconds", r.ingest.Seconds(), secs(r.ingest)).
			set("ingest rows/s", "ingestRowsPerSecond", float64(ingestRows)/r.ingest.Seconds(), perSecond(float64(ingestRows), r.ingest)).
			set("rotation", "rotationSeconds", r.rotation.Seconds(), secs(r.rotation)).
			set("rotation rows/s", "rotationRowsPerSecond", float64(rotRows)/r.rotation.Seconds(), perSecond(float64(rotRows), r.rotation)).
			peakRSS(r.peak).
			set("state", "verified", boolValue(r.ok), verifiedText(r.ok, false)).
			Note = fmt.Sprintf("ingest from the first message read; %s from the start (group join included)", secs(r.fromStart))
		if v.conflation {
			stb = r
		}
	}
	res.ratio("stb ingest / pgx ceiling ingest", stb.ingest.Seconds()/pgxIngest.Seconds(), "").atMost(1.5, "×")
	res.ratio("stb rotation / pgx ceiling rotation", stb.rotation.Seconds()/pgxRot.Seconds(), "").atMost(1.5, "×")
	res.ratio("stb ingest / read+decode ceiling", stb.ingest.Seconds()/decode.Seconds(), "")
	res.ratio("stb ingest / raw read ceiling", stb.ingest.Seconds()/rawRead.Seconds(), "")
	res.rssBudget(stb.peak, e.cfg.MaxBufferedBytes, "")
	res.note("rows: the ingest inserts %s clusters and %s placement rows and sets %s compliance rows; the rotation updates %s rows",
		thousands(largeHubClusters), thousands(rotRows), thousands(rotRows), thousands(rotRows))
	return nil
}

// largeHubPGX writes the ingest (the hub's four bundles, one transaction
// each) and then the rotation into a fresh database, and returns how long
// each took.
func (e *benchEnv) largeHubPGX(ctx context.Context, st *finalState, rotation transport.Envelope) (ingest, rot time.Duration, err error) {
	url, err := e.freshDB(ctx, "stb_bench_largehub_pgx")
	if err != nil {
		return 0, 0, err
	}
	if _, _, err := db.Migrate(ctx, url, e.logger); err != nil {
		return 0, 0, err
	}
	pool, err := db.Connect(ctx, url, int32(e.cfg.PoolSize))
	if err != nil {
		return 0, 0, err
	}
	defer pool.Close()
	w := &pgxWriter{pool: pool, reg: e.reg, workers: e.cfg.PoolSize}
	start := time.Now()
	for _, job := range st.jobs(largeHubName) {
		if _, err := w.writeHubs(ctx, [][][]*bundle.Bundle{{job}}); err != nil {
			return 0, 0, err
		}
	}
	ingest = time.Since(start)
	s, _ := e.reg.Lookup(rotation.Type)
	payload, err := s.Decode(rotation.Data)
	if err != nil {
		return 0, 0, err
	}
	b := &bundle.Bundle{Hub: rotation.Hub, Type: rotation.Type, Version: rotation.Version, Dependency: *rotation.Dependency,
		HasDependency: true, Payload: payload, Size: len(rotation.Data)}
	r, err := w.writeHubs(ctx, [][][]*bundle.Bundle{{{b}}})
	if err != nil {
		return 0, 0, err
	}
	if ok, summary, err := largeHubState(ctx, pool, 1); err != nil || !ok {
		return 0, 0, fmt.Errorf("pgx ceiling: the database does not hold the rotated hub (%s): %v", summary, err)
	}
	return ingest, r.Elapsed, nil
}

// largeHubRun is how a bridge variant did on the large hub.
type largeHubRun struct {
	ingest, fromStart, rotation time.Duration
	ok                          bool
	peak                        memUse // from the variant's start to its stop
}

// largeHubVariant runs one bridge variant: the ingest of the backlog, then
// the rotation published to its own topic.
func (e *benchEnv) largeHubVariant(ctx context.Context, dbName string, conflation bool, topics []string,
	pub *transport.Publisher, rotation transport.Envelope, rotTopic string,
) (largeHubRun, error) {
	var r largeHubRun
	label := "large-hub/" + map[bool]string{true: "stb", false: "baseline"}[conflation]
	bb, err := e.startBridge(ctx, variantOpts{label: label, conflation: conflation, topics: topics, db: dbName,
		maxBundleBytes: largeHubMaxBundleBytes})
	if err != nil {
		return r, err
	}
	defer func() { _ = bb.stop() }()

	var firstRead, shown time.Time
	wait := func(stage string, report int) (time.Time, error) {
		deadline := time.Now().Add(e.cfg.Timeout)
		for {
			if err := bb.failed(); err != nil {
				return time.Time{}, err
			}
			now := time.Now()
			if firstRead.IsZero() && bb.b.Stats().Read > 0 {
				firstRead = now
			}
			if ok, _, err := largeHubVersionsAt(ctx, bb, report); err != nil {
				return time.Time{}, err
			} else if ok {
				return now, nil
			}
			if now.After(deadline) {
				return time.Time{}, fmt.Errorf("%s: %s not done after %v", label, stage, e.cfg.Timeout)
			}
			if now.Sub(shown) >= time.Second {
				shown = now
				e.out.progress("%s [%5.1fs] %s: read %d, written %.0f", label, time.Since(bb.started).Seconds(), stage,
					bb.b.Stats().Read, bb.counters().written)
			}
			select {
			case <-ctx.Done():
				return time.Time{}, ctx.Err()
			case <-time.After(largeHubPoll):
			}
		}
	}
	done, err := wait("ingest", 0)
	if err != nil {
		return r, err
	}
	r.ingest, r.fromStart = done.Sub(firstRead), done.Sub(bb.started)
	ok, summary, err := largeHubState(ctx, bb.pool, 0)
	if err != nil || !ok {
		return r, fmt.Errorf("%s: after the ingest: %s %v", label, summary, err)
	}

	rotation.Topic = rotTopic
	rotation.Time = time.Now()
	if err := pub.Publish(ctx, rotation); err != nil {
		return r, err
	}
	done, err = wait("rotation", 1)
	if err != nil {
		return r, err
	}
	r.rotation = done.Sub(rotation.Time)
	e.out.done()
	r.ok, summary, err = largeHubState(ctx, bb.pool, 1)
	if err != nil {
		return r, err
	}
	if !r.ok {
		e.out.say("%s: after the rotation: %s", label, summary)
	}
	err = bb.stop()
	r.peak = bb.peak()
	return r, err
}

// largeHubVersionsAt reports whether the variant's database holds the
// versions of the ingest (report 0) or of the rotation (report 1).
func largeHubVersionsAt(ctx context.Context, bb *benchBridge, report int) (bool, string, error) {
	stored, err := db.LoadVersions(ctx, bb.pool)
	if err != nil {
		return false, "", err
	}
	want := map[string]bundle.Version{"heartbeat": largeHubVersions[0], "managedclusters": largeHubVersions[1],
		"clusterspolicies": largeHubVersions[2], "compliance": largeHubVersions[3+report]}
	n := 0
	for _, sv := range stored {
		if v, ok := want[sv.Type]; ok && sv.Hub == largeHubName && sv.Version == v {
			n++
		}
	}
	return n == len(want), fmt.Sprintf("%d of %d bundle versions", n, len(want)), nil
}

// largeHubState checks the rows of the large hub after compliance report
// r: every placed pair present with the state the report gives it.
func largeHubState(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, r int) (bool, string, error) {
	want := map[string]int64{}
	for c := range largeHubClusters {
		want[largeHubReport(r, c)] += largeHubPolicies
	}
	var compliant, nonCompliant, unknown, clusters int64
	err := q.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE compliance = 'compliant'),
		       count(*) FILTER (WHERE compliance = 'non_compliant'),
		       count(*) FILTER (WHERE compliance = 'unknown'),
		       (SELECT count(*) FROM stb.managed_clusters WHERE hub = $1)
		FROM stb.compliance WHERE hub = $1`, largeHubName).Scan(&compliant, &nonCompliant, &unknown, &clusters)
	if err != nil {
		return false, "", err
	}
	summary := fmt.Sprintf("%d clusters; compliance rows: %d compliant, %d non_compliant, %d unknown (want %d, %d, %d)",
		clusters, compliant, nonCompliant, unknown, want["compliant"], want["non_compliant"], want["unknown"])
	ok := clusters == largeHubClusters && compliant == want["compliant"] && nonCompliant == want["non_compliant"] && unknown == want["unknown"]
	return ok, summary, nil
}
