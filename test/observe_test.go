package test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A burst of bundles with the database as the bottleneck: /metrics shows
// conflation at work, dead letters counted, and the committed offset
// reaching the high watermark; /debug/units shows a known hub with the
// versions just published.
func TestMetricsAndDebugUnitsDuringRun(t *testing.T) {
	e := newEnv(t, 2)
	// The backlog is in Kafka before the bridge starts, and one worker
	// writes it: each hub's older bundles are replaced before written.
	exp := e.simulate("burst", "--hubs", "30", "--clusters", "10", "--generations", "15", "--seed", "5")
	cl := e.producer()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "status", Key: []byte("hub-001"), Value: []byte("not an event")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b := e.startBridge("--db-pool-size", "1")
	e.waitVerified(exp, 2*time.Minute)

	var m metricSamples
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		if m, err = b.scrape(); err != nil {
			t.Fatal(err)
		}
		committed, _ := m.sum("stb_committer_committed_offset")
		high, ok := m.sum("stb_kafka_high_watermark_offset")
		if ok && committed == high && high > 0 {
			t.Logf("committed offsets %v reached the high watermarks %v", committed, high)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offsets %v never reached the high watermarks %v (statistics every 5s)", committed, high)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if lag, _ := m.sum("stb_committer_lag_messages"); lag != 0 {
		t.Errorf("lag %v after catching up, want 0", lag)
	}
	conflated := m[`stb_conflation_bundles_total{outcome="conflated",type="managedclusters"}`]
	if conflated <= 0 {
		t.Errorf("no managedclusters bundle conflated under a burst with one worker")
	}
	if v := m[`stb_transport_rejected_total{reason="not_cloudevent"}`]; v != 1 {
		t.Errorf("rejected not_cloudevent = %v, want 1", v)
	}
	read, _ := m.sum("stb_transport_messages_total")
	written := m[`stb_dispatcher_bundles_total{result="applied",type="managedclusters"}`]
	t.Logf("read %v messages, %v managedclusters conflated, %v written", read, conflated, written)
	if written <= 0 || written+conflated > read {
		t.Errorf("written %v + conflated %v inconsistent with %v read", written, conflated, read)
	}

	// /debug/units for one hub: its processed versions are the ones the
	// simulator sent last.
	status, body, err := b.get("/debug/units?hub=hub-001")
	if err != nil || status != 200 {
		t.Fatalf("/debug/units: %d %v", status, err)
	}
	var units []struct {
		Hub   string `json:"hub"`
		Types []struct {
			Type      string `json:"type"`
			Processed string `json:"processed"`
		} `json:"types"`
	}
	if err := json.Unmarshal([]byte(body), &units); err != nil || len(units) != 1 || units[0].Hub != "hub-001" {
		t.Fatalf("/debug/units?hub=hub-001 = %s (%v)", body, err)
	}
	want := e.expectedVersions(exp, "hub-001")
	for _, ts := range units[0].Types {
		if w, ok := want[ts.Type]; ok && ts.Processed != w {
			t.Errorf("/debug/units: %s processed %s, want %s", ts.Type, ts.Processed, w)
		}
		delete(want, ts.Type)
	}
	if len(want) > 0 {
		t.Errorf("/debug/units lacks types %v", want)
	}
	// The console finds the hub by name.
	status, page, err := b.get("/?q=hub-001")
	if err != nil || status != 200 || !strings.Contains(page, `href="/hub?name=hub-001"`) {
		t.Errorf("console search: %d %v, links hub-001: %v", status, err, strings.Contains(page, `href="/hub?name=hub-001"`))
	}
	b.stop(30 * time.Second)
}
