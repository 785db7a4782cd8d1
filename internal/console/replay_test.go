package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stbridge/stb/internal/replay"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
	"github.com/stbridge/stb/pkg/transport"
)

// storeHeartbeats stores n read-side too_large letters, each a whole
// heartbeat event of its own hub, as the reader stores them.
func storeHeartbeats(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	letters := make([]deadletter.Letter, 0, n)
	for i := range n {
		env := transport.Envelope{Topic: "status", Hub: fmt.Sprintf("hub-%04d", i), Type: "heartbeat",
			Version: bundle.Version{Incarnation: 1, Generation: 1}, Data: []byte(`{}`)}
		msg, err := transport.Encode(env, transport.DefaultTypePrefix)
		if err != nil {
			t.Fatal(err)
		}
		h := map[string]string{}
		for _, x := range msg.Headers {
			h[x.Key] = string(x.Value)
		}
		letters = append(letters, deadletter.Letter{Hub: env.Hub, Type: env.Type, Version: env.Version.String(),
			Origin: bundle.Origin{Topic: "status", Offset: int64(i)}, Reason: deadletter.TooLarge,
			Err: errors.New("as rejected"), Headers: h, Data: msg.Value, Key: msg.Key})
	}
	if _, err := deadletter.NewWriter(pool).Write(context.Background(), letters...); err != nil {
		t.Fatal(err)
	}
}

func post(t *testing.T, h http.Handler, path string, form url.Values) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// TestConsoleReplayIsCapped: one replay request goes through at most
// MaxReplayPerRequest letters, on the console's own replay pool (the
// shared pool is nil here), says how many are left and offers to go on
// after the last; the next request does. A request while a replay runs
// is refused. The regression: a replay of a reason loaded and wrote every
// letter of it in one request, on the bridge's control pool.
func TestConsoleReplayIsCapped(t *testing.T) {
	pool, _ := dbtest.New(t)
	const extra = 7
	storeHeartbeats(t, pool, MaxReplayPerRequest+extra)
	cfg := replay.DefaultConfig()
	c := New(Deps{Replay: &cfg, ReplayPool: pool})
	h := c.Handler()
	applied := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM stb.dead_letters WHERE replay_outcome = 'applied'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	form := url.Values{"csrf": {c.csrf}, "reason": {string(deadletter.TooLarge)}}
	code, body := post(t, h, "/actions/replay", form)
	if code != http.StatusOK || !strings.Contains(body, fmt.Sprintf("%d more selected after letter", extra)) || !strings.Contains(body, `id="replay-more"`) {
		t.Fatalf("first request: %d\n%s", code, body)
	}
	if n := applied(); n != MaxReplayPerRequest {
		t.Fatalf("first request applied %d letters, want the cap of %d", n, MaxReplayPerRequest)
	}
	i := strings.Index(body, `name="after" value="`)
	if i < 0 {
		t.Fatalf("no after in the form to go on:\n%s", body)
	}
	after := body[i+len(`name="after" value="`):]
	after = after[:strings.IndexByte(after, '"')]

	c.replaying.Lock()
	if _, body := post(t, h, "/actions/replay", form); !strings.Contains(body, "already running") {
		t.Errorf("a request during a replay was not refused:\n%s", body)
	}
	c.replaying.Unlock()

	form.Set("after", after)
	code, body = post(t, h, "/actions/replay", form)
	if code != http.StatusOK || strings.Contains(body, `id="replay-more"`) || !strings.Contains(body, fmt.Sprintf("applied %d,", extra)) {
		t.Fatalf("second request, after %s: %d\n%s", after, code, body)
	}
	if n := applied(); n != MaxReplayPerRequest+extra {
		t.Fatalf("after two requests %d letters applied, want %d", n, MaxReplayPerRequest+extra)
	}
}
