package bench

import (
	"bytes"
	"strings"
	"testing"
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
