package console

import (
	"bytes"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/pkg/committer"
	"github.com/stbridge/stb/pkg/deadletter"
)

func get(t *testing.T, h http.Handler, path, auth string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// The admin listener serves pprof, but never the command line.
func TestAdminListenerHasNoCommandLine(t *testing.T) {
	h := New(Deps{}).Handler()
	if code, _ := get(t, h, "/debug/pprof/cmdline", ""); code != http.StatusNotFound {
		t.Fatalf("/debug/pprof/cmdline: %d, want 404", code)
	}
	if code, _ := get(t, h, "/debug/pprof/", ""); code != http.StatusOK {
		t.Fatalf("/debug/pprof/: %d", code)
	}
}

// With --admin-token-file every admin request needs the bearer token;
// without one, none does (the listener is loopback by default).
func TestAdminToken(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "console") })
	h := requireToken("s3cret", ok)
	for _, auth := range []string{"", "Bearer wrong", "Bearer s3cret ", "bearer s3cret", "Basic czNjcmV0", "s3cret"} {
		if code, body := get(t, h, "/", auth); code != http.StatusUnauthorized || strings.Contains(body, "console") {
			t.Errorf("Authorization %q: %d %q, want 401", auth, code, body)
		}
	}
	if code, body := get(t, h, "/", "Bearer s3cret"); code != http.StatusOK || body != "console" {
		t.Fatalf("right token: %d %q", code, body)
	}
	if code, _ := get(t, requireToken("", ok), "/", ""); code != http.StatusOK {
		t.Fatalf("no token configured: %d", code)
	}
}

// Hub, type, version, error and data texts come from the network: a hub
// named <script> must render as text on every console page.
func TestConsoleEscapesNames(t *testing.T) {
	hostile := `<script>alert("hub")</script>`
	img := `<img src=x onerror=alert(1)>`
	letter := deadletter.Row{ID: 1, Hub: hostile, Type: img, Version: hostile, Reason: deadletter.Reason(hostile),
		Error: img, Headers: map[string]string{"ce_source": hostile}, Data: []byte(img)}
	pages := map[string]struct {
		t    *template.Template
		data any
	}{
		"overview": {overviewTmpl, map[string]any{"Q": hostile, "Found": []string{hostile},
			"O": Overview{NotReady: []string{img}, Problems: []HubProblem{{Hub: hostile, Waits: []Wait{{Type: img, DependsOn: hostile}}}},
				Partitions: []committer.PartitionStats{{Topic: img}}, Topics: []TopicLag{{Topic: img}},
				LetterHubs: []LetterHub{{Hub: hostile, Reasons: []ReasonLetters{{Reason: deadletter.Reason(img)}}}}}}},
		"partitions": {partitionsTmpl, map[string]any{"Q": hostile, "Partitions": []committer.PartitionStats{{Topic: img}}}},
		"inactive":   {inactiveTmpl, map[string]any{"Q": hostile, "Hubs": []InactiveHub{{Hub: img}}, "After": hostile, "Next": hostile}},
		"hub": {hubTmpl, map[string]any{"Q": "", "Hub": hostile, "Letters": []deadletter.Row{letter},
			"Unit": conflation.UnitState{Hub: hostile, Types: []conflation.TypeState{{Type: img, Waiting: hostile, LastError: img}}}}},
		"dead letters": {deadLettersTmpl, map[string]any{"Q": "", "Reason": hostile, "Letters": []deadletter.Row{letter},
			"Groups": []deadletter.ReasonCount{{Reason: deadletter.Reason(hostile), Count: 1}}}},
	}
	for name, p := range pages {
		var buf bytes.Buffer
		if err := p.t.Execute(&buf, p.data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		page := buf.String()
		for _, raw := range []string{hostile, img, "<img"} {
			if strings.Contains(page, raw) {
				t.Errorf("%s page holds %q unescaped", name, raw)
			}
		}
		if !strings.Contains(page, "&lt;script&gt;alert") {
			t.Errorf("%s page does not show the hub's name as text", name)
		}
	}
}
