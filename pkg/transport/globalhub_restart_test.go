package transport_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
)

// ghRecorder keeps the messages of a simulated global-hub run, by hub.
type ghRecorder struct{ byHub map[string][]sim.GHMessage }

func (r *ghRecorder) Publish(ctx context.Context, m sim.Message) error {
	return r.PublishGH(ctx, sim.GHMessage{Message: m})
}

func (r *ghRecorder) PublishGH(_ context.Context, m sim.GHMessage) error {
	r.byHub[m.Hub] = append(r.byHub[m.Hub], m)
	return nil
}

// ghBacklogs returns each hub's topic of a simulated global-hub run as
// the reader consumes it: partition 0 of gh-status.<hub>, offsets from 0.
func ghBacklogs(t *testing.T, cfg sim.Config) map[string][]*kafka.Message {
	t.Helper()
	rec := &ghRecorder{byHub: map[string][]sim.GHMessage{}}
	if _, err := sim.Run(context.Background(), cfg, rec, nil); err != nil {
		t.Fatal(err)
	}
	out := map[string][]*kafka.Message{}
	for hub, msgs := range rec.byHub {
		for i, m := range msgs {
			e := transport.GlobalHubEvent{
				Topic: m.Topic, Hub: m.Hub, Type: strings.TrimPrefix(m.Type, bundle.GlobalHubPrefix), ID: m.ID,
				Version: m.Version.String(), SendMode: m.SendMode, Extensions: m.Extensions, Time: m.Time, Data: m.Data,
			}
			if m.ChunkSize > 0 {
				t.Fatalf("hub %s: a chunk at %d; the model reads whole events", hub, i)
			}
			if m.Dependency != nil {
				e.Dependency = m.Dependency.String()
			}
			out[hub] = append(out[hub], consumed(ghEncode(t, e), 0, int64(i)))
		}
	}
	return out
}

// ghRow is a model of a stb.bundle_versions row, as the fence
// (dbsyncers/versions.go) writes it, with the offset of the last message
// whose data was written.
type ghRow struct {
	v  bundle.Version
	at bundle.Origin
	// state is the family state stored (stb.bundle_versions.family_state).
	state []byte
	data  int64
}

// ghModel is a model of one bridge process reading one hub's topic: the
// profile, the real conflation units, and the writes of the workers as
// the version fence makes them, in one goroutine.
type ghModel struct {
	t     *testing.T
	gh    *transport.GlobalHub
	m     *conflation.Manager
	rules transport.Rules
	types map[string]bundle.TypeInfo
	db    map[string]*ghRow
	// read is the next offset to read; done the offsets released.
	read int64
	done map[int64]bool
	// mapped is what each message read was mapped to (a zero version:
	// stale or skipped), and written the offsets whose data was written.
	mapped  map[int64]ghMapped
	written map[int64]bool
}

type ghMapped struct{ v, dep bundle.Version }

func (g *ghModel) Done(o bundle.Origin) { g.done[o.Offset] = true }

func newGHModel(t *testing.T, rules transport.Rules, reg *dbsyncers.Registry) *ghModel {
	t.Helper()
	m, err := conflation.NewManager(conflation.Config{Types: reg.Types(), Now: func() time.Time { return ghTime }})
	if err != nil {
		t.Fatal(err)
	}
	g := &ghModel{t: t, gh: transport.NewGlobalHub(), m: m, rules: rules, types: map[string]bundle.TypeInfo{},
		db: map[string]*ghRow{}, done: map[int64]bool{}, mapped: map[int64]ghMapped{}, written: map[int64]bool{}}
	for _, ti := range reg.Types() {
		g.types[ti.Name] = ti
	}
	return g
}

// restart is a new process on what g's database holds, reading again from
// the stored offset.
func (g *ghModel) restart(reg *dbsyncers.Registry, hub string) *ghModel {
	n := newGHModel(g.t, g.rules, reg)
	for typ, r := range g.db {
		c := *r
		c.state = slices.Clone(r.state)
		n.db[typ] = &c
		n.m.Restore(hub, typ, r.v)
		n.gh.Restore(hub, typ, r.v, r.at, c.state)
	}
	n.read = g.committed()
	return n
}

// committed is the offset the committer stores: the lowest one read and
// not released.
func (g *ghModel) committed() int64 {
	for o := int64(0); o < g.read; o++ {
		if !g.done[o] {
			return o
		}
	}
	return g.read
}

// next reads the next message of msgs.
func (g *ghModel) next(msgs []*kafka.Message) {
	o := g.read
	g.read++
	b, rej := g.gh.Decode(msgs[o], g.rules, ghTime)
	if rej != nil {
		if !rej.Skipped {
			g.t.Fatalf("offset %d rejected: %v", o, rej.Err)
		}
		g.done[o] = true
		return
	}
	g.mapped[o] = ghMapped{b.Version, b.Dependency}
	if b.Version == (bundle.Version{}) {
		g.done[o] = true // stale for the profile: the reader drops it
		return
	}
	b.Track(g)
	g.m.Insert(b)
}

// work runs up to n jobs (all of them when n < 0), as workers do.
func (g *ghModel) work(n int) {
	for ; n != 0; n-- {
		u := g.m.Queue().TryPop()
		if u == nil {
			return
		}
		job, err := u.Next()
		if err != nil {
			continue
		}
		g.write(job)
		g.m.Report(job, conflation.Applied)
	}
}

// write applies a job's version fence and, when it moves, its data.
func (g *ghModel) write(job *conflation.Job) {
	last := job.Last()
	r := g.db[last.Type]
	info := g.types[last.Type]
	if r != nil && info.Stale(last.Version, r.v) {
		return
	}
	if r == nil {
		r = &ghRow{}
		g.db[last.Type] = r
	}
	r.v, r.at, r.data = last.Version, last.Origin, last.Origin.Offset
	if last.FamilyState != nil { // as the fence stores it
		r.state = last.FamilyState.EncodeState()
	}
	for _, b := range job.Bundles {
		g.written[b.Origin.Offset] = true
	}
}

// TestGlobalHubRestartReplay: a bridge stopped anywhere in a global-hub
// agent's backlog on its hub's topic, and started again on what its
// database holds, reading again from the stored offset, ends with what a
// bridge that was not stopped ends with: every event of a stream type
// that one wrote (but copies) is written by one of the two processes, and
// every other type's row ends with the data of the same message. The
// workers write some of what is ready after a third of the messages (two
// schedules), so that a stop finds bundles replaced, pruned or waiting
// for their base.
//
// The agent's rules the backlog follows, as globalhub_runs.go documents
// them: multicluster-global-hub agent/pkg/status/syncers/policies/
// policy_syncer.go (the compliance emitter's version is the complete
// compliance's extdependencyversion), generic_emitter.go (PostSend
// moves the generation after each send) and multi_event_syncer.go (the
// compliance is sent first in every tick); both emitters restart at 0.0
// with the agent.
//
// Regression: TestGlobalHubAgentRestart (test/) ended one run in three
// with a hub's compliance rows in an older state. A complete compliance
// run whose first event was pruned (its compliance replaced before it was
// written) is released, so a bridge started again read from past that
// event, numbered the run's next complete compliance in the run before,
// and dropped it and every later one as stale (hub-003, schedule 2,
// stopped at 123: "globalhub.policy.localcompletecompliance of offset 123
// waits for 4294967297.6, without the stop for 8589934593.6").
func TestGlobalHubRestartReplay(t *testing.T) {
	rules := ghRules(t)
	reg, err := dbsyncers.ForProfiles(false, true)
	if err != nil {
		t.Fatal(err)
	}
	// TestGlobalHubAgent's simulation, smaller. Each sweep decodes its
	// backlog once per stop point, 36 s under -race for all six; seeds 1
	// to 8 with four hubs pass too (100 s without -race).
	cfg := sim.Config{
		Agent: sim.AgentGlobalHub, Hubs: 3, Clusters: 6, Generations: 30, Seed: 61,
		RestartProbability: 0.15, LoseProbability: 0.2,
		GlobalHub: sim.GlobalHubConfig{SendMode: sim.SendModeMixed, FrameBytes: 1500, ResyncEvery: 5},
	}
	backlogs := ghBacklogs(t, cfg)
	for _, hub := range slices.Sorted(maps.Keys(backlogs)) {
		for _, schedule := range []uint64{1, 2} {
			t.Run(fmt.Sprintf("%s/schedule-%d", hub, schedule), func(t *testing.T) {
				ghRestartSweep(t, hub, backlogs[hub], rules, reg, schedule)
			})
		}
	}
}

// ghRestartSweep stops the bridge at every offset of one hub's backlog.
func ghRestartSweep(t *testing.T, hub string, msgs []*kafka.Message, rules transport.Rules, reg *dbsyncers.Registry, schedule uint64) {
	end := int64(len(msgs))
	work := func(g *ghModel, rng *rand.Rand) {
		if rng.IntN(3) == 0 {
			g.work(1 + rng.IntN(3))
		}
	}
	// run reads up to stop with the schedule's writes, the same in every
	// process up to there.
	run := func(g *ghModel, rng *rand.Rand, stop int64) {
		for g.read < stop {
			g.next(msgs)
			work(g, rng)
		}
	}
	// copies are the messages whose event was sent before: a producer's
	// retry, a late copy.
	copies, ids := map[int64]bool{}, map[string]bool{}
	for o, m := range msgs {
		id, _ := header(m, "ce_id")
		copies[int64(o)], ids[id] = ids[id], true
	}
	ref := newGHModel(t, rules, reg)
	run(ref, rand.New(rand.NewPCG(schedule, 1)), end)
	ref.work(-1)

	failed := 0
	for stop := int64(1); stop <= end; stop++ {
		rng := rand.New(rand.NewPCG(schedule, 1))
		first := newGHModel(t, rules, reg)
		run(first, rng, stop)
		second := first.restart(reg, hub)
		from := second.read
		run(second, rng, end)
		second.work(-1)

		var errs []string
		for o := from; o < end; o++ {
			typ := ghBundleType(msgs[o])
			if ref.written[o] && !first.written[o] && !second.written[o] && !copies[o] && ref.types[typ].Kind == bundle.Stream {
				errs = append(errs, fmt.Sprintf("%s of offset %d was never written", typ, o))
			}
			want, got := ref.mapped[o], second.mapped[o]
			if ref.types[typ].Rule == bundle.Exactly && got.v != (bundle.Version{}) && want.v != (bundle.Version{}) && got.dep != want.dep {
				errs = append(errs, fmt.Sprintf("%s of offset %d waits for %v, without the stop for %v", typ, o, got.dep, want.dep))
			}
		}
		for _, typ := range slices.Sorted(maps.Keys(ref.db)) {
			want, got := ref.db[typ], second.db[typ]
			if ref.types[typ].Kind != bundle.Stream && (got == nil || got.data != want.data) {
				errs = append(errs, fmt.Sprintf("%s ends with the data of offset %d, want %d%s", typ, got.dataOffset(), want.data, mappedSince(msgs, typ, from, ref, second)))
			}
		}
		if len(errs) == 0 {
			continue
		}
		if failed++; failed <= 3 {
			t.Errorf("stopped at %d, read again from %d:\n\t%s", stop, from, strings.Join(errs, "\n\t"))
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d stop points failed", failed, end)
	}
}

func (r *ghRow) dataOffset() int64 {
	if r == nil {
		return -1
	}
	return r.data
}

// mappedSince lists how the messages of typ from offset from on were
// mapped where the two processes disagree.
func mappedSince(msgs []*kafka.Message, typ string, from int64, ref, second *ghModel) string {
	var out []string
	for o := from; o < int64(len(msgs)) && len(out) < 6; o++ {
		if ghBundleType(msgs[o]) == typ && ref.mapped[o] != second.mapped[o] {
			want, got := ref.mapped[o], second.mapped[o]
			out = append(out, fmt.Sprintf("\n\t\toffset %d maps to %v (dependency %v), without the stop to %v (%v)", o, got.v, got.dep, want.v, want.dep))
		}
	}
	return strings.Join(out, "")
}

// ghBundleType is the bundle type of a global-hub message.
func ghBundleType(msg *kafka.Message) string {
	typ, _ := header(msg, "ce_type")
	return bundle.GlobalHubPrefix + strings.TrimPrefix(typ, transport.GlobalHubEventTypePrefix)
}

// TestGlobalHubRestartReplayReordered is TestGlobalHubRestartReplay on
// backlogs where, at every restart of the agent, its producer put the new
// run's first complete compliance ahead of the run's first compliance
// (acks=1, retries=1, no idempotence: upstream pkg/transport/config/
// confluent_config.go). Without a stop, each such complete compliance
// waits for the compliance read after it, never stale; stopped anywhere,
// the bridge ends as one that was not, and numbers every complete
// compliance it writes as that one does. Seed 4's hub-003 has a stop after
// which the complete compliance is two runs behind the compliance
// restored (firstOfBaseRun); seeds 1 to 8 with four hubs and both
// schedules pass (3 min without -race).
func TestGlobalHubRestartReplayReordered(t *testing.T) {
	rules := ghRules(t)
	reg, err := dbsyncers.ForProfiles(false, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		seed int64
		hubs int
		only string
	}{{61, 3, ""}, {4, 4, "hub-003"}} {
		cfg := sim.Config{
			Agent: sim.AgentGlobalHub, Hubs: tc.hubs, Clusters: 6, Generations: 30, Seed: tc.seed,
			RestartProbability: 0.15, LoseProbability: 0.2,
			GlobalHub: sim.GlobalHubConfig{SendMode: sim.SendModeMixed, FrameBytes: 1500, ResyncEvery: 5},
		}
		backlogs := ghBacklogs(t, cfg)
		moved := 0
		for _, hub := range slices.Sorted(maps.Keys(backlogs)) {
			if tc.only != "" && hub != tc.only {
				continue
			}
			msgs, overtaking := overtakeCompliance(backlogs[hub])
			moved += len(overtaking)
			ref := newGHModel(t, rules, reg)
			for range msgs {
				ref.next(msgs)
				ref.work(-1)
			}
			for _, o := range overtaking {
				got, base := ref.mapped[o], ref.mapped[o+1]
				if got.v == (bundle.Version{}) || got.dep != base.v || !ref.written[o] {
					t.Errorf("seed %d, %s: the complete compliance at %d, ahead of its compliance, maps to %v waiting for %v (written %v); its compliance is %v",
						tc.seed, hub, o, got.v, got.dep, ref.written[o], base.v)
				}
			}
			// One schedule: the sweep takes 5 s per hub under -race.
			t.Run(fmt.Sprintf("seed-%d/%s", tc.seed, hub), func(t *testing.T) {
				ghRestartSweep(t, hub, msgs, rules, reg, 1)
			})
		}
		if moved == 0 {
			t.Fatalf("seed %d: no agent restart in the backlogs", tc.seed)
		}
	}
}

// overtakeCompliance returns msgs with each agent run's first complete
// compliance moved ahead of that run's first compliance, offsets
// numbered again, and the offsets the moved ones have now. Copies (an id
// sent before) are left where they are.
func overtakeCompliance(msgs []*kafka.Message) ([]*kafka.Message, []int64) {
	out := slices.Clone(msgs)
	ids := map[string]bool{}
	lastFirstLC := -1
	var moved []int
	for i := 0; i < len(out); i++ {
		m := out[i]
		id, _ := header(m, "ce_id")
		v, _ := header(m, "ce_"+transport.ExtVersion)
		copied := ids[id]
		ids[id] = true
		if copied || !strings.HasPrefix(v, "0.") {
			continue
		}
		switch ghBundleType(m) {
		case dbsyncers.GHLocalCompliance:
			lastFirstLC = i
		case dbsyncers.GHLocalCompleteCompliance:
			if lastFirstLC < 0 {
				continue
			}
			// Move it to just before the compliance.
			copy(out[lastFirstLC+1:i+1], out[lastFirstLC:i])
			out[lastFirstLC] = m
			moved = append(moved, lastFirstLC)
			lastFirstLC = -1
		}
	}
	for i, m := range out {
		c := *m
		out[i] = consumed(&c, 0, int64(i))
	}
	var at []int64
	for _, i := range moved {
		at = append(at, int64(i))
	}
	return out, at
}
