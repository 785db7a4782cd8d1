package console

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

// A Cloud Native Events node's page lists its rows of stb.cne_state;
// a hub without any shows no such section.
func TestConsoleShowsCNERows(t *testing.T) {
	pool, _ := dbtest.New(t)
	reg, err := dbsyncers.NewRegistry(cne.Syncers()...)
	if err != nil {
		t.Fatal(err)
	}
	// A ptp-state-change as cloud-event-proxy's GetPTPEventsData builds it.
	values, node, err := cne.Parse(cne.Context{Type: cne.PtpStateChange, ID: "1", Source: cne.ResourceLockState,
		Time: time.Now(), Origin: bundle.Origin{Topic: "status", Partition: 2, Offset: 9}},
		[]byte(`{"version":"1.0","values":[{"ResourceAddress":"/cluster/node/n1/sync/ptp-status/lock-state","data_type":"notification","value_type":"enumeration","value":"HOLDOVER"},`+
			`{"ResourceAddress":"/cluster/node/n1/sync/ptp-status/lock-state","data_type":"metric","value_type":"decimal64.3","value":-42}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle.Bundle{Hub: node, Type: cne.BundleType, Payload: &cne.Payload{Values: values}}
	if err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error { _, err := reg.Apply(t.Context(), tx, []*bundle.Bundle{b}); return err }); err != nil {
		t.Fatal(err)
	}
	h := New(Deps{Units: consoleOf(t, 0).units, Pool: pool}).Handler()
	code, body := get(t, h, "/hub?name=n1", "")
	if code != 200 || !strings.Contains(body, "Cloud Native Events of this node") || !strings.Contains(body, "HOLDOVER") ||
		!strings.Contains(body, "-42") || !strings.Contains(body, "status/2@9") {
		t.Fatalf("%d:\n%s", code, body)
	}
	if _, body := get(t, h, "/hub?name=other", ""); strings.Contains(body, "Cloud Native Events") {
		t.Errorf("a hub without rows shows the section")
	}
}
