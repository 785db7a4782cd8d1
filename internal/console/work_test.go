package console

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stbridge/stb/pkg/db/dbtest"
)

// The work page lists the clusters with stored ManifestWork statuses and
// a cluster's latest rows, conditions and tombstones included, with names
// from the network escaped.
func TestWorkPage(t *testing.T) {
	pool, _ := dbtest.New(t)
	if _, err := pool.Exec(t.Context(), `
		INSERT INTO work.resource_status (source, resource_id, cluster, agent, resource_version, sequence_id, status, event_type, event_id, deleted, updated_at)
		VALUES ('maestro', 'r1', 'c1', 'c1-work-agent', 3, 7, '{"conditions":[{"type":"Applied","status":"True"}]}', 'io.x.status.update_request', 'e1', false, now()),
		       ('maestro', 'r2', 'c1', 'c1-work-agent', 1, 9, '{"conditions":[{"type":"Deleted","status":"True"}]}', 'io.x.status.update_request', 'e2', true, now() - interval '1 minute'),
		       ('maestro', 'r3', '<script>x</script>', 'a', 1, 1, NULL, 't', 'e3', false, now() - interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	h := New(Deps{Pool: pool}).Handler()
	code, body := get(t, h, "/work", "")
	if code != http.StatusOK || !strings.Contains(body, `href="/work?cluster=c1"`) || !strings.Contains(body, "<td>2</td><td>1</td>") {
		t.Fatalf("/work: %d\n%s", code, body)
	}
	if strings.Contains(body, "<script>x") {
		t.Errorf("/work: a cluster name is not escaped:\n%s", body)
	}
	code, body = get(t, h, "/work?cluster=c1", "")
	if code != http.StatusOK || !strings.Contains(body, "Applied=True") || !strings.Contains(body, "<b>deleted</b> Deleted=True") ||
		strings.Index(body, "<td>r1</td>") > strings.Index(body, "<td>r2</td>") {
		t.Errorf("/work?cluster=c1: %d, want r1 (Applied) before the tombstone r2:\n%s", code, body)
	}
}
