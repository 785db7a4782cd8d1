package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRatioUnit: a ratio prints with its unit, in its scenario's table and
// in the summary over repetitions; "×" only when it has none.
func TestRatioUnit(t *testing.T) {
	scenario := func(name string, v float64) *scenarioResult {
		s := &scenarioResult{Name: name}
		cpu := s.ratio("cpu", v, "")
		cpu.Unit = "CPU-s"
		cpu.atMost(0.35, " CPU-s")
		s.ratio("factor", 2*v, "").atMost(1, "×")
		rate := s.ratio("rate", 1000*v, "")
		rate.Unit = "/s"
		return s
	}
	lineOf := func(out, name string) string {
		for l := range strings.SplitSeq(out, "\n") {
			if f := strings.Fields(l); len(f) > 1 && (f[0] == name || f[1] == name) {
				return l
			}
		}
		t.Fatalf("no line for %q in:\n%s", name, out)
		return ""
	}
	var b bytes.Buffer
	scenario("steady", 0.71).print(&b)
	table := b.String()
	rep := &benchReport{Scenarios: []*scenarioResult{scenario("steady #1", 0.7), scenario("steady #2", 0.71), scenario("steady #3", 0.72)}}
	b.Reset()
	rep.printSummary(&b)
	summary := b.String()

	for _, out := range []string{table, summary} {
		for name, want := range map[string]string{"cpu": withUnit(0.71, "CPU-s"), "factor": withUnit(1.42, ""), "rate": withUnit(710, "/s")} {
			if l := lineOf(out, name); !strings.Contains(l+" ", " "+want+" ") {
				t.Errorf("%s: %q lacks %q", name, l, want)
			}
		}
	}
	if l := lineOf(table, "cpu"); strings.Contains(l, "0.71×") || !strings.Contains(l, "MISSED") {
		t.Errorf("cpu: %q, want the value in CPU-s and the target missed", l)
	}
	for unit, want := range map[string]string{"": "0.50×", "/s": "0.50/s", "CPU-s": "0.50 CPU-s"} {
		if got := withUnit(0.5, unit); got != want {
			t.Errorf("withUnit(0.5, %q) = %q, want %q", unit, got, want)
		}
	}
}

func TestFormatting(t *testing.T) {
	for name, tc := range map[string]struct{ got, want string }{
		"trimFloat small":       {trimFloat(1.2345), "1.23"},
		"trimFloat tens":        {trimFloat(12.345), "12.3"},
		"trimFloat hundreds":    {trimFloat(123.45), "123"},
		"trimFloat negative":    {trimFloat(-12.345), "-12.3"},
		"trimFloat NaN":         {trimFloat(math.NaN()), "n/a"},
		"trimFloat Inf":         {trimFloat(math.Inf(1)), "n/a"},
		"thousands 0":           {thousands(0), "0"},
		"thousands 999":         {thousands(999), "999"},
		"thousands 1000":        {thousands(1000), "1,000"},
		"thousands million":     {thousands(1_021_727), "1,021,727"},
		"thousands negative":    {thousands(-1234567), "-1,234,567"},
		"secs below 100":        {secs(1234 * time.Millisecond), "1.23s"},
		"secs above 100":        {secs(123400 * time.Millisecond), "123s"},
		"perSecond":             {perSecond(5000, 2*time.Second), "2,500"},
		"perSecond no time":     {perSecond(5000, 0), "-"},
		"mib":                   {mib(1.5 * (1 << 20)), "1.5MiB"},
		"params sorted, ints":   {formatParams(map[string]any{"rounds": 240, "hubs": 1000, "rate": "5/s"}), "hubs 1,000, rate 5/s, rounds 240"},
		"postgresName":          {postgresName("PostgreSQL 17.2 (Debian 17.2-1) on x86_64-pc-linux-gnu"), "PostgreSQL 17.2"},
		"postgresName unknown":  {postgresName("?"), "?"},
		"withUnit factor":       {withUnit(2, ""), "2.00×"},
		"withUnit symbol":       {withUnit(12000, "/s"), "12000/s"},
		"withUnit word":         {withUnit(0.35, "CPU-s"), "0.35 CPU-s"},
		"formatByType in order": {formatByType(map[string]float64{"policyevents": 3, "heartbeat": 1}, map[string]int{"heartbeat": 10, "policyevents": 30}), "heartbeat 1/10, policyevents 3/30"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", name, tc.got, tc.want)
		}
	}
}

// TestRatioTargets: a target holds or is missed by how much, in the
// direction of its bound.
func TestRatioTargets(t *testing.T) {
	for name, tc := range map[string]struct {
		value   float64
		atLeast bool
		target  float64
		met     bool
		by      float64
		text    string
	}{
		"at least, met":      {60, true, 50, true, 0, "≥ 50.0×"},
		"at least, equal":    {50, true, 50, true, 0, "≥ 50.0×"},
		"at least, missed":   {25, true, 50, false, 2, "≥ 50.0×"},
		"at least, zero":     {0, true, 50, false, 0, "≥ 50.0×"},
		"at most, met":       {1.1, false, 1.2, true, 0, "≤ 1.20×"},
		"at most, missed":    {2.4, false, 1.2, false, 2, "≤ 1.20×"},
		"at most, no target": {1, false, 0, false, 0, "≤ 0.00×"},
	} {
		t.Run(name, func(t *testing.T) {
			s := &scenarioResult{}
			r := s.ratio("r", tc.value, "")
			if tc.atLeast {
				r.atLeast(tc.target, "×")
			} else {
				r.atMost(tc.target, "×")
			}
			if r.Met == nil || *r.Met != tc.met || math.Abs(r.By-tc.by) > 1e-9 || r.Target != tc.text {
				t.Errorf("met %v, by %v, target %q; want %v, %v, %q", *r.Met, r.By, r.Target, tc.met, tc.by, tc.text)
			}
		})
	}
}

// TestScenarioPrint: a scenario prints as its parameters, its error, a
// table with a column per header in the order first added ("-" where a
// row has none), its ratios with their targets, and its notes.
func TestScenarioPrint(t *testing.T) {
	s := &scenarioResult{Name: "catch-up", Params: map[string]any{"hubs": 1000, "took": "1m0s"}, Error: "baseline: boom"}
	s.row("c", "raw read ceiling").set("time", "seconds", 1.5, "1.50s").Note = "polling"
	s.row("a", "stb (conflation)").set("time", "seconds", 3, "3.00s").set("rows", "rows", 1234, "1,234")
	s.ratio("stb time / raw read ceiling time", 2, "").atMost(1.5, "×")
	s.ratio("baseline time / stb time", 80, "scaled").atLeast(50, "×")
	s.ratio("plain", 0.5, "")
	s.ratio("unmeasured", 0, "").atLeast(50, "×")
	s.note("backlog: %d messages", 10)
	var b bytes.Buffer
	s.print(&b)
	want := `
== catch-up (hubs 1,000, took 1m0s)
   FAILED: baseline: boom
      variant           time   rows   note
   c  raw read ceiling  1.50s  -      polling
   a  stb (conflation)  3.00s  1,234  
   stb time / raw read ceiling time                2.00×   target ≤ 1.50×: MISSED by 1.33×
   baseline time / stb time                        80.0×   target ≥ 50.0×: met  (scaled)
   plain                                           0.50×
   unmeasured                                      0.00×   target ≥ 50.0×: MISSED
   * backlog: 10 messages
`
	if got := b.String(); got != want {
		t.Errorf("printed:\n%s\nwant:\n%s", got, want)
	}
}

// TestPrintSummary: over repetitions, each ratio's median (of an even
// count, the mean of the middle two), range and how often its target
// held; nothing without repetitions.
func TestPrintSummary(t *testing.T) {
	run := func(name string, v float64) *scenarioResult {
		s := &scenarioResult{Name: name}
		s.ratio("speed-up", v, "").atLeast(50, "×")
		return s
	}
	var b bytes.Buffer
	(&benchReport{Scenarios: []*scenarioResult{run("catch-up", 60), run("steady", 1)}}).printSummary(&b)
	if b.Len() != 0 {
		t.Errorf("a summary without repetitions:\n%s", b.String())
	}
	for name, tc := range map[string]struct {
		values []float64
		want   string
	}{
		"odd":  {[]float64{70, 40, 60}, "60.0×  (40.0 – 70.0)   target ≥ 50.0× met in 2 of 3"},
		"even": {[]float64{40, 60, 80, 45}, "52.5×  (40.0 – 80.0)   target ≥ 50.0× met in 2 of 4"},
	} {
		t.Run(name, func(t *testing.T) {
			rep := &benchReport{}
			for i, v := range tc.values {
				rep.Scenarios = append(rep.Scenarios, run(fmt.Sprintf("catch-up #%d", i+1), v))
			}
			var b bytes.Buffer
			rep.printSummary(&b)
			if !strings.Contains(b.String(), "catch-up   speed-up") || !strings.Contains(b.String(), tc.want) {
				t.Errorf("summary:\n%s\nwant a line for catch-up's speed-up with %q", b.String(), tc.want)
			}
		})
	}
}

// TestWriteJSON: the --out file holds every figure under its key, leaves
// out the ones that are not numbers, and reads back.
func TestWriteJSON(t *testing.T) {
	s := &scenarioResult{Name: "steady", Params: map[string]any{"hubs": 10}}
	s.row("a", "stb").set("time", "seconds", 2, "2.00s").set("p99", "freshnessP99", math.NaN(), "n/a")
	s.ratio("r", 1.5, "").atMost(1, "×")
	rep := &benchReport{Command: "stb bench --scenario steady", Machine: machineInfo{CPUs: 2}, Scenarios: []*scenarioResult{s}}
	path := filepath.Join(t.TempDir(), "out.json")
	if err := rep.writeJSON(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back benchReport
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Scenarios) != 1 || back.Command != rep.Command || back.Machine.CPUs != 2 {
		t.Fatalf("read back %+v", back)
	}
	got := back.Scenarios[0]
	if len(got.Rows) != 1 || !maps.Equal(got.Rows[0].Values, map[string]float64{"seconds": 2}) {
		t.Errorf("values %v, want only seconds", got.Rows[0].Values)
	}
	if r := got.Ratios[0]; r.Met == nil || *r.Met || r.By != 1.5 || r.Target != "≤ 1.00×" {
		t.Errorf("ratio %+v", r)
	}
}
