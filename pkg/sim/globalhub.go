package sim

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
)

// The global-hub agent (Config.Agent AgentGlobalHub) publishes what the
// agent of stolostron/multicluster-global-hub publishes, shaped from its
// code: each rule below names the upstream file it comes from. A round is
// one tick of the agent's periodic syncer
// (agent/pkg/status/generic/periodic_syncer.go @8d06dae9: every emitter's
// Send, every sync interval), in which the hub's model moves first (its
// clusters, policies, events, ACS counts and migrations) and the agent
// then sends, type by type:
//
//   - managedhub.heartbeat, data [], every tick (heartbeat_syncer.go
//     @c2bcd3af); managedhub.info when it changed (cluster_info_syncer.go
//     @915c1bd8), sometimes first without a clusterId;
//   - managedcluster and policy.localspec, generic bundles of objects
//     (ghObjectEmitter): resync frames and one resync_metadata frame when
//     the agent starts and every GlobalHubConfig.ResyncEvery rounds, and
//     at every tick the updates and deletes seen since;
//   - policy.localcompliance and policy.localcompletecompliance, the
//     generic emitters of the policy syncer, when they changed;
//   - event.managedcluster, event.localrootpolicy,
//     event.localreplicatedpolicy and event.clustergroupupgrade
//     (ghEventEmitter), in batches or one by one (GlobalHubConfig.SendMode);
//   - security.alertcounts, every ghAlertEvery ticks, for hubs with an
//     ACS Central; managedclustermigration, a report per migration stage.
//
// Versions are the agent's (pkg/bundle/version/version.go @8916332):
// "<generation>.<value>" per type, both 0 when the agent starts; see
// ghVersion for who moves which. The producer
// (pkg/transport/producer/generic_producer.go, id 61874921510) keys each
// message by its event type, cuts data above GlobalHubConfig.ChunkBytes
// into chunks, and gives every message it sends a new random id and the
// time of the agent's node.
//
// The simulator adds what goes wrong around a real agent: restarts (a new
// run: every version from 0 again, every object type resynced, the last
// events sent again), a node clock behind the one of the run before
// (GlobalHubConfig.ClockSkew), generic frames of changes lost on the way
// (Config.LoseProbability; only the next periodic resync repairs them),
// exact copies of a message sent again right after it (a producer retry),
// and late copies of messages of the last rounds and of the run before's
// first (generation-0) messages (a replayed partition). Copies are of whole
// events, all their chunks, and never of managedclustermigration, whose
// versions start again with every migration.

// Bundle types of the global-hub agent: its event type after the
// CloudEvents prefix (ghEventTypePrefix), behind bundle.GlobalHubPrefix.
// The event types are the agent's pkg/enum/event_type.go, by the name
// beside each.
const (
	TypeGHHeartbeat          = bundle.GlobalHubPrefix + "managedhub.heartbeat"           // HubClusterHeartbeatType
	TypeGHHubInfo            = bundle.GlobalHubPrefix + "managedhub.info"                // HubClusterInfoType
	TypeGHManagedCluster     = bundle.GlobalHubPrefix + "managedcluster"                 // ManagedClusterType
	TypeGHLocalSpec          = bundle.GlobalHubPrefix + "policy.localspec"               // LocalPolicySpecType
	TypeGHLocalCompliance    = bundle.GlobalHubPrefix + "policy.localcompliance"         // LocalComplianceType
	TypeGHCompleteCompliance = bundle.GlobalHubPrefix + "policy.localcompletecompliance" // LocalCompleteComplianceType
	TypeGHClusterEvent       = bundle.GlobalHubPrefix + "event.managedcluster"           // ManagedClusterEventType
	TypeGHRootPolicyEvent    = bundle.GlobalHubPrefix + "event.localrootpolicy"          // LocalRootPolicyEventType
	TypeGHReplicatedEvent    = bundle.GlobalHubPrefix + "event.localreplicatedpolicy"    // LocalReplicatedPolicyEventType
	TypeGHCGUEvent           = bundle.GlobalHubPrefix + "event.clustergroupupgrade"      // ClusterGroupUpgradesEventType
	TypeGHAlertCounts        = bundle.GlobalHubPrefix + "security.alertcounts"           // SecurityAlertCountsType
	// TypeGHMigration is the type of the migration reports
	// (enum.ManagedClusterMigrationType of later agents, named in
	// pkg/bundle/migration; see ghMigrationStatus).
	TypeGHMigration = bundle.GlobalHubPrefix + "managedclustermigration"

	// GlobalHubTopicPrefix starts the topic of each hub of the global-hub
	// agent ("gh-status.<hub>"); GlobalHubSharedTopic is the one topic all
	// hubs share when Kafka is brought by the user
	// (operator/pkg/config/transport_config.go, id 61662099305).
	GlobalHubTopicPrefix = "gh-status."
	GlobalHubSharedTopic = "gh-status"
	// ClusterIDClaim is the cluster claim the agent identifies a managed
	// cluster by.
	ClusterIDClaim = "id.k8s.io"
)

// Chances and periods of what goes wrong and what happens now and then.
const (
	// ghLateCopyProbability is the chance per hub and round that a whole
	// event of the run's last ghRecentRounds rounds is sent again;
	// ghEarlierRunCopyProbability that one of the run before's first
	// events is.
	ghLateCopyProbability       = 0.15
	ghEarlierRunCopyProbability = 0.3
	ghRecentRounds              = 2
	// ghDuplicateProbability is the chance that a message is sent twice
	// in a row.
	ghDuplicateProbability = 0.03
	// ghAlertEvery is the number of ticks between two polls of an ACS
	// Central (upstream 30 min, StackRoxDefaultPollInterval).
	ghAlertEvery = 4
)

// ghEventEpoch is the creation time of a hub's first event; each later one
// is a second after the one before, so that a seed sends the same data
// every time.
var ghEventEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ghVersion is an emitter's version as the agent keeps it
// (pkg/bundle/version/version.go @8916332): incr (Incr) moves the value
// when what the emitter holds changed, next (Next) the generation after a
// send or, for the object and event emitters, at every tick; neither
// resets the other.
type ghVersion struct{ generation, value uint64 }

func (v *ghVersion) incr() { v.value++ }
func (v *ghVersion) next() { v.generation++ }

// newerThan is Version.NewerThan: generation first, then value.
func (v ghVersion) newerThan(o ghVersion) bool {
	return v.generation > o.generation || (v.generation == o.generation && v.value > o.value)
}

// wire is the version as Message carries it: bundle.Version's
// "<incarnation>.<generation>" is the agent's "<generation>.<value>".
func (v ghVersion) wire() bundle.Version {
	return bundle.Version{Incarnation: v.generation, Generation: v.value}
}

// ghGeneric is the version side of the agent's generic emitter
// (agent/pkg/status/generic/generic_emitter.go @fe3c6c8c): it sends when
// its version is newer than the last sent (ShouldSend), and a send moves
// to the next generation (PostSend).
type ghGeneric struct{ current, lastSent ghVersion }

func (g *ghGeneric) shouldSend() bool { return g.current.newerThan(g.lastSent) }

func (g *ghGeneric) sent() {
	g.current.next()
	g.lastSent = g.current
}

// ghEvent is one CloudEvent the agent hands its producer.
type ghEvent struct {
	typ      string
	version  ghVersion
	dep      *ghVersion
	sendMode string
	ext      map[string]string
	data     []byte
}

// ghSent is an event the agent sent, as the messages it became, for
// copies.
type ghSent struct {
	round int
	msgs  []GHMessage
}

// ghAgent is one hub's global-hub agent: the model of its hub, its
// current run, and what the database must hold of what it sent.
type ghAgent struct {
	hub, topic string
	index      int
	cfg        GlobalHubConfig
	loseP      float64
	// wire draws what happens to the messages (ids, clocks, losses,
	// copies) apart from the model's draws.
	wire *rand.Rand

	clusters *managedClusters
	policies *policyModel // nil without policies
	spec     *ghSpecs     // the policies' objects; nil without policies
	info     ghInfoModel
	alerts   *ghAlertModel // nil for a hub without ACS
	mig      ghMigrations
	events   ghEventModel

	run  *ghRun
	runs int
	// skew is the current run's node clock against the real one.
	skew time.Duration
	// recent are the events of the current run that late copies repeat;
	// earlier the run before's generation-0 ones.
	recent, earlier []ghSent
	// lastEvents are the events made in the last round, per type, which a
	// restarted agent sends again.
	lastEvents map[string][][]byte

	stats GHStats
	out   []GHMessage
	// rotated: the first round of GlobalHubConfig.Rotate made its events.
	rotated bool
}

// ghRun is what one run of the agent holds: every emitter starts empty at
// version 0.0.
type ghRun struct {
	start int // its first round
	round int // the current round

	heartbeat         ghVersion
	info              ghGeneric
	noClusterID       bool // the ClusterVersion was not read yet
	clusters          *ghObjectEmitter
	clusterView       map[string]ghClusterSeen
	policies          *ghObjectEmitter
	policyView        map[string]int // policy id → metadata.generation reported
	policyNames       map[string]string
	compliance        ghGeneric
	complianceView    map[string]string
	complete          ghGeneric
	completeView      map[string]string
	events            map[string]*ghEventEmitter
	alerts, migration ghVersion
	dirty             map[string]bool // object types with a lost frame since their last resync
	firsts            []ghSent        // generation-0 events sent
	started           bool
}

// ghEventTypes are the event types in the order the agent sends them.
var ghEventTypes = []string{TypeGHClusterEvent, TypeGHRootPolicyEvent, TypeGHReplicatedEvent, TypeGHCGUEvent}

func newGHAgent(rng *rand.Rand, cfg Config, i int, clusters *managedClusters) *ghAgent {
	name := cfg.hubName(i)
	topic := cfg.Topic
	if topic == "" {
		topic = GlobalHubTopicPrefix + name
	}
	a := &ghAgent{
		hub: name, topic: topic, index: i, cfg: cfg.GlobalHub, loseP: max(cfg.LoseProbability, 0),
		wire:       rand.New(rand.NewPCG(uint64(cfg.Seed)^0x676c6f62616c6875^cfg.FirstIncarnation, uint64(i))),
		clusters:   clusters,
		info:       newGHInfoModel(rng, name),
		mig:        ghMigrations{rows: map[string]map[string]Migration{}},
		events:     newGHEventModel(name, cfg.EventsPerRound),
		lastEvents: map[string][][]byte{},
	}
	if cfg.Policies > 0 {
		a.policies = newPolicyModel(rng, name, clusters, cfg)
		a.spec = newGHSpecs()
		if cfg.GlobalHub.Rotate {
			a.policies.placeAll(i > 0)
		}
	}
	if i%3 != 2 { // two hubs in three run ACS
		a.alerts = newGHAlertModel(name)
	}
	return a
}

// startRun starts a run of the agent in round.
func (a *ghAgent) startRun(round int) {
	if a.run != nil { // a restart
		a.earlier = a.run.firsts
		a.stats.Restarts++
		if a.cfg.ClockSkew > 0 && a.wire.IntN(2) == 0 {
			a.skew -= a.cfg.ClockSkew + time.Duration(a.wire.Int64N(int64(a.cfg.ClockSkew)))
			a.stats.SkewedRestarts++
		}
	}
	a.runs++
	a.recent = nil
	single := a.cfg.single(a.index)
	r := &ghRun{
		start: round, round: round,
		clusters: &ghObjectEmitter{limit: a.cfg.FrameBytes},
		policies: &ghObjectEmitter{limit: a.cfg.FrameBytes},
		events:   map[string]*ghEventEmitter{},
		dirty:    map[string]bool{},
	}
	for _, typ := range ghEventTypes {
		r.events[typ] = &ghEventEmitter{single: single, limit: a.cfg.FrameBytes}
	}
	a.run = r
}

// step is one round of the hub: its model moves, then the agent sends.
func (a *ghAgent) step(rng *rand.Rand, t tick) ([]GHMessage, error) {
	if t.fresh() {
		a.startRun(t.round)
	}
	r := a.run
	r.round = t.round
	a.out = nil

	// The model moves.
	if t.round > 1 {
		a.clusters.evolve(rng, t.round)
	}
	if a.policies != nil {
		if a.cfg.Rotate {
			if t.round > 1 {
				a.policies.rotate()
			}
		} else {
			a.policies.evolvePlacement(rng, t.round)
			a.policies.evolveCompliance(rng)
		}
		a.spec.evolve(rng, a.policies, a.cfg.Rotate)
	}
	made, err := a.events.make(rng, a)
	if err != nil {
		return nil, err
	}
	a.info.evolve(rng, t, r)
	if a.alerts != nil && (t.round-r.start)%ghAlertEvery == 0 {
		a.alerts.evolve(rng)
	}
	a.mig.evolve(rng, a, t)

	// The agent sends.
	steps := []func() error{
		a.sendHeartbeat,
		a.sendInfo,
		a.sendClusters,
		a.sendSpecs,
		a.sendCompliance,
		func() error { a.sendEvents(made); return nil },
		a.sendAlerts,
		a.sendMigrations,
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	a.lastEvents = made
	r.started = true
	a.lateCopies()
	return a.out, nil
}

// finish returns what the agent sends after the last round, when a type
// lost a frame since its last resync: the tick of the next periodic
// resync, which repairs what the lost frames left out (its heartbeat, and
// a resync of each such type).
func (a *ghAgent) finish() ([]GHMessage, error) {
	a.out = nil
	r := a.run
	if r == nil || (!r.dirty[TypeGHManagedCluster] && !r.dirty[TypeGHLocalSpec]) {
		return nil, nil
	}
	r.round++
	if err := a.sendHeartbeat(); err != nil {
		return nil, err
	}
	for _, typ := range []string{TypeGHManagedCluster, TypeGHLocalSpec} {
		if !r.dirty[typ] {
			continue
		}
		if err := a.resyncObjects(typ); err != nil {
			return nil, err
		}
	}
	return a.out, nil
}

// resyncDue reports whether the periodic syncer resyncs the object types
// in the current round: at the agent's start (every registered type is
// queued for a resync, periodic_syncer.go Start) and every ResyncEvery
// rounds after.
func (a *ghAgent) resyncDue() bool {
	r := a.run
	if !r.started {
		return true
	}
	since := r.round - r.start
	return a.cfg.ResyncEvery > 0 && since > 0 && since%a.cfg.ResyncEvery == 0
}

// send hands ev to the producer: its messages join the round's, sometimes
// twice in a row, and are kept for late copies.
func (a *ghAgent) send(ev ghEvent) {
	msgs := a.produce(ev)
	for _, m := range msgs {
		a.out = append(a.out, m)
		if m.ChunkSize == 0 && a.wire.Float64() < ghDuplicateProbability {
			a.out = append(a.out, m) // a producer retry: the very same message
			a.stats.Duplicates++
		}
	}
	if ev.typ == TypeGHMigration {
		return // never copied: its versions start again with every migration
	}
	s := ghSent{round: a.run.round, msgs: msgs}
	a.recent = append(a.recent, s)
	if ev.version.generation == 0 {
		a.run.firsts = append(a.run.firsts, s)
	}
}

// produce is the producer's SendEvent (generic_producer.go, id
// 61874921510): data above the chunk limit is cut into chunks sent one
// after the other, each with extsize (the whole length) and extoffset
// (where the chunk ends); the CloudEvents SDK gives every send a new id
// and the time of the node (client WithUUIDs, WithTimeNow).
func (a *ghAgent) produce(ev ghEvent) []GHMessage {
	msg := func(data []byte) GHMessage {
		m := GHMessage{
			Message: Message{
				Topic: a.topic, Hub: a.hub, Type: ev.typ, ID: newUUID(a.wire),
				Version: ev.version.wire(), Time: time.Now().Add(a.skew), Data: data,
			},
			SendMode: ev.sendMode, Extensions: ev.ext,
		}
		if ev.dep != nil {
			d := ev.dep.wire()
			m.Dependency = &d
		}
		return m
	}
	if len(ev.data) <= a.cfg.ChunkBytes {
		return []GHMessage{msg(ev.data)}
	}
	var out []GHMessage
	for end := 0; end < len(ev.data); {
		start := end
		end = min(start+a.cfg.ChunkBytes, len(ev.data))
		m := msg(ev.data[start:end])
		m.ChunkSize, m.ChunkEnd = len(ev.data), end
		out = append(out, m)
	}
	a.stats.ChunkedEvents++
	a.stats.Chunks += len(out)
	return out
}

// lateCopies sometimes sends again a whole event of the run's last rounds,
// and one of the run before's first events.
func (a *ghAgent) lateCopies() {
	round := a.run.round
	a.recent = slices.DeleteFunc(a.recent, func(s ghSent) bool { return s.round < round-ghRecentRounds })
	var before []ghSent
	for _, s := range a.recent {
		if s.round < round {
			before = append(before, s)
		}
	}
	if len(before) > 0 && a.wire.Float64() < ghLateCopyProbability {
		a.out = append(a.out, before[a.wire.IntN(len(before))].msgs...)
		a.stats.LateCopies++
	}
	if len(a.earlier) > 0 && a.wire.Float64() < ghEarlierRunCopyProbability {
		a.out = append(a.out, a.earlier[a.wire.IntN(len(a.earlier))].msgs...)
		a.stats.EarlierRunCopies++
	}
}

// record adds what the database must hold of the hub to st.
func (a *ghAgent) record(st *HubState) {
	st.Heartbeat = a.run != nil
	a.clusters.record(st)
	if a.policies != nil {
		st.Compliance = a.policies.compliance()
		st.LocalPolicies = a.spec.record(a.policies)
	}
	a.events.record(st)
	st.HubClusterID, st.HubInfo = a.info.lastID, a.info.lastPayload
	if a.alerts != nil && a.alerts.sent {
		st.AlertCounts = map[string]AlertCounts{a.alerts.source: a.alerts.last}
	}
	if len(a.mig.rows) > 0 {
		st.Migrations = a.mig.rows
	}
}

// GHStats counts what the global-hub agents of a run did, over all hubs,
// so that a test can tell what the run exercised.
type GHStats struct {
	// Restarts, and those of them whose clock went back.
	Restarts       int `json:"restarts"`
	SkewedRestarts int `json:"skewedRestarts"`
	// Resyncs of an object type (at the start, periodic, or after the
	// last round to repair a loss) and the frames they sent (resync and
	// resync_metadata).
	Resyncs      int `json:"resyncs"`
	ResyncFrames int `json:"resyncFrames"`
	// Lost frames of changes, never published.
	Lost int `json:"lost"`
	// Duplicates sent right after their message; late copies of whole
	// events of the run's last rounds; copies of the run before's
	// generation-0 events.
	Duplicates       int `json:"duplicates"`
	LateCopies       int `json:"lateCopies"`
	EarlierRunCopies int `json:"earlierRunCopies"`
	// Events sent in chunks, and the chunks.
	ChunkedEvents int `json:"chunkedEvents"`
	Chunks        int `json:"chunks"`
	// Events sent alone (sendmode single).
	SingleEvents int `json:"singleEvents"`
	// Infos sent without a clusterId.
	InfosWithoutClusterID int `json:"infosWithoutClusterId"`
	// Migrations started, and reports with resync set.
	Migrations       int `json:"migrations"`
	MigrationResyncs int `json:"migrationResyncs"`
}

func (s *GHStats) add(o GHStats) {
	s.Restarts += o.Restarts
	s.SkewedRestarts += o.SkewedRestarts
	s.Resyncs += o.Resyncs
	s.ResyncFrames += o.ResyncFrames
	s.Lost += o.Lost
	s.Duplicates += o.Duplicates
	s.LateCopies += o.LateCopies
	s.EarlierRunCopies += o.EarlierRunCopies
	s.ChunkedEvents += o.ChunkedEvents
	s.Chunks += o.Chunks
	s.SingleEvents += o.SingleEvents
	s.InfosWithoutClusterID += o.InfosWithoutClusterID
	s.Migrations += o.Migrations
	s.MigrationResyncs += o.MigrationResyncs
}

// counts returns the agent's stats.
func (a *ghAgent) counts() GHStats {
	s := a.stats
	s.Migrations, s.MigrationResyncs = a.mig.migrations, a.mig.resyncs
	return s
}
