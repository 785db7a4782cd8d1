package replay

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ce "github.com/cloudevents/sdk-go/v2/event"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/dispatcher"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/backoff"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db/dbtest"
	"github.com/stbridge/stb/pkg/deadletter"
	simcne "github.com/stbridge/stb/pkg/sim/cne"
	simwork "github.com/stbridge/stb/pkg/sim/work"
	"github.com/stbridge/stb/pkg/transport"
)

// TestWriteTimeLettersReplayFromTheStoredCopy: a bundle of each family
// (STB's own, the global-hub agent's, the work agents', Cloud Native
// Events), read as the reader reads it, whose write fails for good (a
// trigger refuses it: a data exception), is dead-lettered by the worker
// that wrote it; once the trigger is gone, a replay from the copy stored
// in stb.dead_letters, without Kafka, writes it. A worker's letter kept
// the bundle's Raw as the event's data: for the work family that is a
// line of the event's attributes and then the data, which a replay handed
// to the family as the data again (bad_payload); the cne family survived
// by sniffing for its own line, in binary mode only. In structured mode
// (the whole event in the value) the stored headers hold no attributes.
func TestWriteTimeLettersReplayFromTheStoredCopy(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	workStatus := func(structured bool) func(t *testing.T) *kafka.Message {
		return func(t *testing.T) *kafka.Message {
			ev, _ := simwork.Status{Type: work.UpdateRequest, ID: "status-1", Cluster: "cluster-1", Source: "maestro",
				ResourceID: "rid-1", Generation: 2, SequenceID: fmt.Sprint(int64(7)<<22 | 1<<12), Time: at}.Event()
			msg, err := simwork.Message(ev, "status", structured)
			if err != nil {
				t.Fatal(err)
			}
			return msg
		}
	}
	cneEvent := func(spec string, structured bool) func(t *testing.T) *kafka.Message {
		return func(t *testing.T) *kafka.Message {
			e := ce.New(spec)
			e.SetID("ptp-1")
			e.SetSource("/sync/ptp-status/lock-state")
			e.SetType(cne.PtpStateChange)
			e.SetTime(at)
			a := "/cluster/node/node-1/sync/ptp-status/lock-state"
			data := `{"version":"1.0","values":[{"ResourceAddress":"` + a + `","data_type":"notification","value_type":"enumeration","value":"LOCKED"},` +
				`{"ResourceAddress":"` + a + `","data_type":"metric","value_type":"decimal64.3","value":7}]}`
			if err := e.SetData(ce.ApplicationJSON, []byte(data)); err != nil {
				t.Fatal(err)
			}
			msg, err := simcne.Encode(simcne.Message{Topic: "status", Node: "node-1", Event: e, Structured: structured})
			if err != nil {
				t.Fatal(err)
			}
			return msg
		}
	}
	for _, tc := range []struct {
		name string
		msg  func(t *testing.T) *kafka.Message
		// table is where the bundle is written, hub and col its row.
		table, col, hub string
	}{
		{"stb", func(t *testing.T) *kafka.Message {
			msg, err := transport.Encode(transport.Envelope{Topic: "status", Hub: "hub-s", Type: "heartbeat", Version: ver(1, 2), Data: []byte(`{}`)}, transport.DefaultTypePrefix)
			if err != nil {
				t.Fatal(err)
			}
			return msg
		}, "stb.hub_heartbeats", "hub", "hub-s"},
		{"globalhub", func(t *testing.T) *kafka.Message {
			msg, err := transport.EncodeGlobalHub(transport.GlobalHubEvent{Topic: "status", Hub: "hub-g",
				Type: strings.TrimPrefix(dbsyncers.GHHeartbeat, bundle.GlobalHubPrefix), ID: "beat-1", Version: "1.1", Data: []byte(`[]`)})
			if err != nil {
				t.Fatal(err)
			}
			return msg
		}, "status.leaf_hub_heartbeats", "leaf_hub_name", "hub-g"},
		{"work", workStatus(false), "work.resource_status", "cluster", "cluster-1"},
		{"work, structured", workStatus(true), "work.resource_status", "cluster", "cluster-1"},
		{"cne", cneEvent(ce.CloudEventsVersionV1, false), "stb.cne_state", "hub", "node-1"},
		{"cne 0.3", cneEvent(ce.CloudEventsVersionV03, false), "stb.cne_state", "hub", "node-1"},
		{"cne, structured", cneEvent(ce.CloudEventsVersionV1, true), "stb.cne_state", "hub", "node-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, _ := dbtest.New(t)
			ctx := context.Background()
			msg := tc.msg(t)
			msg.TopicPartition.Partition, msg.TopicPartition.Offset = 0, 41
			if _, err := pool.Exec(ctx, `
				CREATE FUNCTION stb.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN RAISE EXCEPTION 'refused by a trigger' USING ERRCODE = '22023'; END $$;
				CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON `+tc.table+` FOR EACH ROW EXECUTE FUNCTION stb.refuse()`); err != nil {
				t.Fatal(err)
			}
			writeAndDeadLetter(t, pool, msg)
			rows := byHub(t, pool, tc.hub)
			if len(rows) != 1 || rows[0].Reason != deadletter.DataException {
				t.Fatalf("letters of %s: %+v, want one data_exception", tc.hub, rows)
			}
			t.Logf("stored letter: type %s, headers %v, data %.120q", rows[0].Type, rows[0].Headers, rows[0].Data)
			if _, err := pool.Exec(ctx, `DROP TRIGGER refuse ON `+tc.table); err != nil {
				t.Fatal(err)
			}

			cfg := DefaultConfig()
			cfg.Profiles = profiles.Names()
			res := run(t, pool, cfg)
			if len(res) != 1 {
				t.Fatalf("%d results, want 1", len(res))
			}
			for _, r := range res {
				if r.Outcome != deadletter.ReplayApplied || r.From != deadletter.ReplayFromStored {
					t.Errorf("replay: %s from %q (%s: %v), want applied from the stored copy", r.Outcome, r.From, r.Reason, r.Err)
				}
			}
			var n int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+tc.table+` WHERE `+tc.col+` = $1`, tc.hub).Scan(&n); err != nil || n == 0 {
				t.Errorf("%s holds %d rows of %s (%v) after the replay, want its row", tc.table, n, tc.hub, err)
			}
		})
	}
}

// writeAndDeadLetter reads msg as the bridge's reader does (every
// profile), and hands the bundle to a dispatcher as the bridge wires one,
// until the bundle is done: written, or dead-lettered.
func writeAndDeadLetter(t *testing.T, pool *pgxpool.Pool, msg *kafka.Message) {
	t.Helper()
	set, err := profiles.Parse(profiles.Names())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := set.Registry()
	if err != nil {
		t.Fatal(err)
	}
	families := set.Families()
	b, rej := transport.DecodeFamilies(msg, transport.DefaultConfig().Rules(reg), families, time.Now())
	if rej != nil {
		t.Fatalf("read: %v", rej)
	}
	var done atomic.Int32
	b.Track(doneFunc(func() { done.Add(1) }))
	mgr, err := conflation.NewManager(conflation.Config{Types: reg.Types(), Merge: reg.Mergers(), Decode: reg.Decode,
		Backoff: backoff.Exponential{Min: 5 * time.Millisecond, Max: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	mgr.Insert(b)
	dcfg := dispatcher.DefaultConfig(1)
	dcfg.WakeInterval = 10 * time.Millisecond
	d, err := dispatcher.New(dcfg, dispatcherDeps(pool, mgr, reg, families))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for done.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if done.Load() == 0 {
		t.Fatal("the bundle was neither written nor dead-lettered")
	}
}

// dispatcherDeps are a dispatcher's as the bridge wires them
// (internal/bridge eventLetters): the families that rebuild their events
// for the workers' dead letters.
func dispatcherDeps(pool *pgxpool.Pool, mgr *conflation.Manager, reg *dbsyncers.Registry, families []transport.Family) dispatcher.Deps {
	var events []dispatcher.EventLetters
	for _, f := range families {
		if e, ok := f.(dispatcher.EventLetters); ok {
			events = append(events, e)
		}
	}
	return dispatcher.Deps{Pool: pool, Manager: mgr, Applier: reg, DeadLetters: deadletter.NewWriter(pool), Logger: zap.NewNop(), Events: events}
}

type doneFunc func()

func (f doneFunc) Done(bundle.Origin) { f() }
