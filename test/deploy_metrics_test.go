package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Deploy tests, part two: the metrics the dashboard and the alerts name,
// checked against the running binary, and the Deployment's environment.

// metricRef is one stb_* name in an expression, and where it is.
type metricRef struct {
	metric, where string
}

var metricNameRE = regexp.MustCompile(`\bstb_[a-z0-9_]+`)

func metricRefs(expr, where string) []metricRef {
	var out []metricRef
	for _, m := range metricNameRE.FindAllString(expr, -1) {
		out = append(out, metricRef{m, where})
	}
	return out
}

type dashboard struct {
	refs []metricRef
}

// loadDashboard parses the dashboard, checks its structure and returns the
// metrics its panels and variables query.
func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		UID           string            `json:"uid"`
		Title         string            `json:"title"`
		SchemaVersion int               `json:"schemaVersion"`
		Panels        []json.RawMessage `json:"panels"`
		Templating    struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("dashboard: uid %q, title %q, schemaVersion %d: want a uid, a title and schemaVersion >= 36", d.UID, d.Title, d.SchemaVersion)
	}
	var out dashboard
	ids := map[int]bool{}
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, rp := range ps {
			var p panel
			if err := json.Unmarshal(rp, &p); err != nil {
				t.Fatalf("dashboard: panel: %v", err)
			}
			if ids[p.ID] {
				t.Errorf("dashboard: panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			n := 0
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) != "" {
					n++
				}
				out.refs = append(out.refs, metricRefs(tg.Expr, fmt.Sprintf("dashboard panel %q", p.Title))...)
			}
			if n == 0 {
				t.Errorf("dashboard: panel %q has no query", p.Title)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		out.refs = append(out.refs, metricRefs(v.Definition, fmt.Sprintf("dashboard variable %q", v.Name))...)
	}
	if len(out.refs) == 0 {
		t.Fatalf("dashboard: no stb_* metric in any query")
	}
	return out
}

// ruleRefs returns the stb_* metrics of every PrometheusRule expression.
func ruleRefs(t *testing.T) []metricRef {
	t.Helper()
	var out []metricRef
	for _, m := range loadManifests(t) {
		if m.meta.Kind != "PrometheusRule" {
			continue
		}
		var r prometheusRule
		if err := m.node.Decode(&r); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		for _, g := range r.Spec.Groups {
			for _, rule := range g.Rules {
				out = append(out, metricRefs(rule.Expr, "alert "+rule.Alert+rule.Record)...)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no stb_* metric in any PrometheusRule expression")
	}
	return out
}

// waitHealthy waits until the bridge answers /healthz.
func waitHealthy(t *testing.T, b *bridge, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(b.httpURL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if !b.running() {
			t.Fatalf("the bridge exited: %v", b.err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bridge did not answer /healthz within %v: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metricFamilies returns the families on a /metrics page: name → type.
// client_golang prints a family only once it has a series, so a labelled
// family appears only after its first observation.
func metricFamilies(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %v %s", err, resp.Status)
	}
	fams := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ := strings.Cut(rest, " ")
			if _, ok := fams[name]; !ok {
				fams[name] = "untyped"
			}
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			if len(f) == 2 {
				fams[f[0]] = f[1]
			}
		}
	}
	return fams
}

// exported reports whether a name used in PromQL is a series of one of fams:
// a family itself, or a histogram's _bucket, _sum or _count.
func exported(name string, fams map[string]string) bool {
	if _, ok := fams[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			switch fams[base] {
			case "histogram":
				return true
			case "summary":
				return suffix != "_bucket"
			}
		}
	}
	return false
}

// TestDeployMetricsExist runs the binary until every family it has shows on
// /metrics, then checks that each stb_* metric the dashboard and the alerts
// name is one of them.
func TestDeployMetricsExist(t *testing.T) {
	refs := append(loadDashboard(t).refs, ruleRefs(t)...)
	wanted := map[string][]string{} // metric → where it is used
	for _, r := range refs {
		if !slices.Contains(wanted[r.metric], r.where) {
			wanted[r.metric] = append(wanted[r.metric], r.where)
		}
	}
	names := make([]string, 0, len(wanted))
	for n := range wanted {
		names = append(names, n)
	}
	sort.Strings(names)
	missing := func(fams map[string]string) []string {
		var out []string
		for _, n := range names {
			if !exported(n, fams) {
				out = append(out, n)
			}
		}
		return out
	}

	e := newEnv(t, 1)
	fams := map[string]string{}
	merge := func(f map[string]string) {
		for k, v := range f {
			fams[k] = v
		}
	}

	// 1. A small simulation, written and verified: the histograms and the
	// labelled counters of the normal path get their first series.
	b := e.startBridge()
	exp := e.simulate("deploy", "--hubs", "3", "--clusters", "2", "--generations", "2", "--seed", "5")
	e.waitVerified(exp, time.Minute)
	merge(metricFamilies(t, b.httpURL))
	b.stop(30 * time.Second)

	// 2. The failure paths, on a second run from the stored offsets: a
	// bundle whose dependency never comes is dead-lettered by a worker
	// (stb_dispatcher_dead_letters_total), and a bootstrap broker that
	// refuses connections, which librdkafka connects to at once without
	// sparse connections, makes it report an error
	// (stb_transport_kafka_errors_total). A short dependency timeout here
	// cannot touch the simulation, which step 1 finished.
	dead := freePort(t) // nothing listens there
	b = e.startBridge("--dependency-timeout", "1s", "--kafka-brokers", e.brokers+","+dead,
		"--kafka-property", "enable.sparse.connections=false")
	waitHealthy(t, b, 30*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers), kgo.DefaultProduceTopic("status"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	orphan := &kgo.Record{
		Key:   []byte("hub-orphan"),
		Value: []byte(`{"objects":[{"policyId":"p1","nonCompliantClusters":["c1"],"unknownComplianceClusters":[]}]}`),
		Headers: []kgo.RecordHeader{
			{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte("deploy-orphan")},
			{Key: "ce_source", Value: []byte("hub-orphan")}, {Key: "ce_type", Value: []byte("io.stb.status.v1.compliance")},
			{Key: "ce_time", Value: []byte(time.Now().UTC().Format(time.RFC3339Nano))},
			{Key: "ce_extversion", Value: []byte("1.1")}, {Key: "ce_extdependencyversion", Value: []byte("1.1")},
			{Key: "content-type", Value: []byte("application/json")},
		},
	}
	if err := cl.ProduceSync(context.Background(), orphan).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Scrape until nothing is missing: the dead letter takes the dependency
	// timeout, and the families fed by librdkafka's statistics (lag, high
	// watermark, round-trip time) appear with the first statistics, after
	// statistics.interval.ms (5s). A metric stb does not have costs the
	// whole wait.
	deadline := time.Now().Add(30 * time.Second)
	for {
		merge(metricFamilies(t, b.httpURL))
		if len(missing(fams)) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	b.stop(30 * time.Second)

	var stb []string
	for f := range fams {
		if strings.HasPrefix(f, "stb_") {
			stb = append(stb, f)
		}
	}
	sort.Strings(stb)
	t.Logf("stb exports %d stb_* families: %s", len(stb), strings.Join(stb, " "))
	t.Logf("the dashboard and the alerts name %d stb_* metrics", len(names))
	gone := missing(fams)
	for _, n := range gone {
		t.Errorf("MISSING METRIC %s: not on stb's /metrics; used by %s", n, strings.Join(wanted[n], ", "))
	}
	if len(gone) > 0 {
		t.Errorf("%d of %d metrics named by deploy/ are not exported by stb: %s", len(gone), len(names), strings.Join(gone, " "))
	}
	// And the other way: every family stb exports is in the README's table
	// of metrics and on the dashboard or in an alert, so that an operator
	// finds what each series means and sees it.
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range stb {
		if !strings.Contains(string(readme), "| `"+f+"` |") {
			t.Errorf("UNDOCUMENTED METRIC %s: exported but not a row of the README's table of metrics", f)
		}
		if len(wanted[f])+len(wanted[f+"_bucket"])+len(wanted[f+"_sum"])+len(wanted[f+"_count"]) == 0 {
			t.Errorf("UNSHOWN METRIC %s: exported but on no dashboard panel and in no alert of deploy/", f)
		}
	}
}

// TestDeployEnvironment runs `stb run` with the Deployment's own environment
// and requires it to become ready, then to stop within the pod's grace
// period: every value the manifest sets is one the binary accepts and runs
// with. The values that point at real infrastructure or Secrets (brokers,
// database, Kafka properties, HTTP address) are the test's, given on the
// command line, which wins over the environment.
func TestDeployEnvironment(t *testing.T) {
	var dep k8sDeployment
	only(t, loadManifests(t), "Deployment", &dep)
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 || pod.TerminationGracePeriodSeconds == nil {
		t.Fatalf("Deployment: want one container and terminationGracePeriodSeconds")
	}
	skip := map[string]bool{"STB_KAFKA_BROKERS": true, "STB_KAFKA_PROPERTY": true, "STB_HTTP_ADDR": true, "STB_DATABASE_URL": true}
	var set []string
	for _, ev := range pod.Containers[0].Env {
		if ev.ValueFrom != nil || skip[ev.Name] || strings.Contains(ev.Value, "$(") {
			continue
		}
		t.Setenv(ev.Name, ev.Value) // inherited by the bridge process
		set = append(set, ev.Name+"="+ev.Value)
	}
	t.Logf("environment from the Deployment: %s", strings.Join(set, " "))

	e := newEnv(t, 2)
	b := e.startBridge()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(b.httpURL + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			err = fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
		}
		if !b.running() {
			t.Fatalf("stb run exited with the Deployment's environment (%v); log:\n%s", b.err, tail(b.log.String(), 20))
		}
		if time.Now().After(deadline) {
			t.Fatalf("stb run with the Deployment's environment never became ready: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	b.stop(grace)
	t.Logf("ready with the Deployment's environment, stopped cleanly within %v of SIGTERM", grace)
}
