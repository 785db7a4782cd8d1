package verify

import (
	"fmt"
	"strings"
	"testing"
)

func TestCategoryDescribe(t *testing.T) {
	tests := []struct {
		c    Category
		n    int
		want string
	}{
		{Category{StaleVersion, "managedclusters"}, 3, "3 hubs have stale managedclusters versions"},
		{Category{StaleVersion, "heartbeat"}, 1, "1 hub has stale heartbeat versions"},
		{Category{NewerVersion, "heartbeat"}, 2, "2 hubs have heartbeat versions newer than the last sent"},
		{Category{MissingVersion, "heartbeat"}, 1, "1 hub has no heartbeat version"},
		{Category{UnexpectedVersion, "compliance"}, 1, "1 hub has compliance versions but sent no compliance bundle"},
		{Category{Kind: MissingCluster}, 1, "1 hub is missing managed clusters"},
		{Category{Kind: MissingCluster}, 4, "4 hubs are missing managed clusters"},
		{Category{Kind: UnexpectedCluster}, 2, "2 hubs have unexpected managed clusters"},
		{Category{Kind: WrongClusterID}, 1, "1 hub has managed clusters with wrong cluster ids"},
		{Category{Kind: WrongLabels}, 5, "5 hubs have managed clusters with wrong labels"},
		{Category{Kind: MissingCompliance}, 1, "1 hub is missing compliance rows"},
		{Category{Kind: MissingCompliance}, 2, "2 hubs are missing compliance rows"},
		{Category{Kind: UnexpectedCompliance}, 1, "1 hub has unexpected compliance rows"},
		{Category{Kind: WrongCompliance}, 3, "3 hubs have compliance rows in the wrong state"},
		{Category{Kind: MissingEvent}, 1, "1 hub is missing policy events"},
		{Category{Kind: UnexpectedEvent}, 2, "2 hubs have unexpected policy events"},
		{Category{Kind: MissingHeartbeat}, 1, "1 hub has no heartbeat"},
		{Category{Kind: UnexpectedHeartbeat}, 2, "2 hubs have a heartbeat but sent none"},
		{Category{Kind: MissingHub}, 2, "2 hubs are missing from stb.hubs"},
		{Category{Kind: UnexpectedHub}, 1, "1 unexpected hub has rows in the database"},
		{Category{Kind: UnexpectedHub}, 7, "7 unexpected hubs have rows in the database"},
	}
	for _, tt := range tests {
		if got := tt.c.Describe(tt.n); got != tt.want {
			t.Errorf("Describe(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestReportSummary(t *testing.T) {
	var r Report
	r.Hubs = 4
	r.add(Category{Kind: WrongLabels}, "hub-2", "managed cluster c labels: generation=%q, want %q", "1", "2")
	r.add(Category{StaleVersion, "managedclusters"}, "hub-3", "managedclusters version 1.2, want 1.4 (stale)")
	r.add(Category{StaleVersion, "managedclusters"}, "hub-1", "managedclusters version 1.2, want 1.4 (stale)")
	r.add(Category{StaleVersion, "heartbeat"}, "hub-1", "heartbeat version 1.1, want 1.3 (stale)")
	r.finish()

	want := `database differs from the expected state of 4 hubs: 4 differences
  1 hub has stale heartbeat versions
  2 hubs have stale managedclusters versions
  1 hub has managed clusters with wrong labels
differences:
  hub-1: heartbeat version 1.1, want 1.3 (stale)
  hub-1: managedclusters version 1.2, want 1.4 (stale)
  hub-2: managed cluster c labels: generation="1", want "2"
  hub-3: managedclusters version 1.2, want 1.4 (stale)`
	if got := r.Summary(); got != want {
		t.Errorf("Summary:\n%s\nwant:\n%s", got, want)
	}
	if r.OK() {
		t.Error("OK with differences")
	}
}

func TestReportSummaryShowsTheFirstDifferences(t *testing.T) {
	var r Report
	r.Hubs = 30
	for i := range 25 {
		r.add(Category{Kind: MissingHeartbeat}, fmt.Sprintf("hub-%02d", i), "no heartbeat")
	}
	r.finish()
	s := r.Summary()
	for _, want := range []string{
		"of 30 hubs: 25 differences\n",
		"\n  25 hubs have no heartbeat\n",
		"\nfirst 20 of 25 differences:\n  hub-00: no heartbeat\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if !strings.HasSuffix(s, "\n  hub-19: no heartbeat") {
		t.Errorf("summary does not end with the 20th difference:\n%s", s)
	}

	var one Report
	one.add(Category{Kind: MissingHub}, "h", "not in stb.hubs")
	one.finish()
	if s := one.Summary(); !strings.Contains(s, ": 1 difference\n") {
		t.Errorf("summary of one difference:\n%s", s)
	}
}

func TestReportOK(t *testing.T) {
	r := Report{Hubs: 2, Versions: 4, Clusters: 10, ComplianceRows: 30, Events: 7}
	r.finish()
	if !r.OK() || r.Summary() != "database matches the expected state: 2 hubs, 4 bundle versions, 10 managed clusters, 30 compliance rows, 7 policy events" {
		t.Errorf("OK %v, summary %q", r.OK(), r.Summary())
	}
}

func TestDiffLabels(t *testing.T) {
	want := map[string]string{"generation": "3", "vendor": "OpenShift"}
	tests := []struct {
		raw  string
		diff string
	}{
		{`{"vendor": "OpenShift", "generation": "3"}`, ""},
		{`{"vendor": "OpenShift", "generation": "2"}`, `generation="2", want "3"`},
		{`{"vendor": "OpenShift"}`, `generation missing, want "3"`},
		{`{"vendor": "OpenShift", "generation": "3", "extra": "x"}`, `extra="x" unexpected`},
		{`{"generation": 3}`, "is not a map of strings"},
		{"", `generation missing, want "3", vendor missing, want "OpenShift"`},
	}
	for _, tt := range tests {
		var raw []byte
		if tt.raw != "" {
			raw = []byte(tt.raw)
		}
		got := diffLabels(raw, want)
		if (tt.diff == "") != (got == "") || !strings.Contains(got, tt.diff) {
			t.Errorf("diffLabels(%s) = %q, want %q", tt.raw, got, tt.diff)
		}
	}
}
