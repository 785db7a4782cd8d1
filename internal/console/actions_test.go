package console

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestActionPageRenders: the page every action answers with renders
// whole (a template that fails half way leaves the operator a blank
// page), with its lines and error escaped.
func TestActionPageRenders(t *testing.T) {
	rec := httptest.NewRecorder()
	render(rec, actionTmpl, actionResult{Title: "Replay", Lines: []string{"applied 1, <b>x</b>"}, Err: errors.New("boom <i>"), Back: "/deadletters"})
	body := rec.Body.String()
	for _, want := range []string{`id="action-result"`, "applied 1, &lt;b&gt;x&lt;/b&gt;", "boom &lt;i&gt;", `href="/deadletters"`, "</html>"} {
		if !strings.Contains(body, want) {
			t.Errorf("action page lacks %q:\n%s", want, body)
		}
	}
}
