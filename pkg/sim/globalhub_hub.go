package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
)

// What the global-hub agent says about its hub itself: heartbeats, the
// hub's info, its ACS Central's alert counts, and its cluster migrations.

const (
	// ghInfoWithoutIDProbability is the chance that a run's first info
	// goes out before the hub's ClusterVersion was read, without a
	// clusterId; ghGrafanaProbability the chance per round that the
	// observability route comes or goes.
	ghInfoWithoutIDProbability = 0.3
	ghGrafanaProbability       = 0.05
	// ghMigrationProbability is the chance per round that a migration of
	// some of the hub's clusters starts while none runs;
	// ghMigrationErrorProbability that a stage after validating fails;
	// ghMigrationResyncProbability that a restarted agent with migrations
	// reported tells the manager to forget them.
	ghMigrationProbability       = 0.1
	ghMigrationErrorProbability  = 0.15
	ghMigrationResyncProbability = 0.5
	// ghGlobalHubClusterName is the clustername extension of the reports
	// to the global hub (constants.CloudEventGlobalHubClusterName).
	ghGlobalHubClusterName = "global-hub"
)

// sendHeartbeat sends a heartbeat: data [], every tick; its generic
// emitter is always due and never increments, so its versions are 0.0,
// 1.0, 2.0, … (heartbeat_syncer.go @c2bcd3af).
func (a *ghAgent) sendHeartbeat() error {
	r := a.run
	a.send(ghEvent{typ: TypeGHHeartbeat, version: r.heartbeat, data: []byte(`[]`)})
	r.heartbeat.next()
	return nil
}

// ghHubInfo is cluster.HubClusterInfo (hub_cluster_info_bundle.go
// @3ccf7767): every key always there, possibly "". No handler sets
// mchVersion in the syncer @915c1bd8.
type ghHubInfo struct {
	ConsoleURL string `json:"consoleURL"`
	GrafanaURL string `json:"grafanaURL"`
	MCHVersion string `json:"mchVersion"`
	ClusterID  string `json:"clusterId"`
}

// ghInfoModel is what the hub says about itself, and the last info with a
// clusterId sent: the manager ignores one without
// (hub_cluster_info_handler.go @06ef95e).
type ghInfoModel struct {
	hub         string
	info        ghHubInfo
	lastID      string
	lastPayload json.RawMessage
}

func newGHInfoModel(rng *rand.Rand, hub string) ghInfoModel {
	return ghInfoModel{hub: hub, info: ghHubInfo{
		ConsoleURL: "https://console-openshift-console.apps." + hub + ".example.com",
		ClusterID:  newUUID(rng),
	}}
}

// evolve moves the info's version as its controllers do
// (cluster_info_syncer.go @915c1bd8): the routes' controller increments
// on a change whether or not the clusterId is known; the ClusterVersion's
// only once it has one. A run starts with the routes read, and sometimes
// without the ClusterVersion, which comes a round later.
func (m *ghInfoModel) evolve(rng *rand.Rand, t tick, r *ghRun) {
	switch {
	case t.fresh():
		r.noClusterID = rng.Float64() < ghInfoWithoutIDProbability
		r.info.current.incr()
	case r.noClusterID:
		r.noClusterID = false
		r.info.current.incr()
	case rng.Float64() < ghGrafanaProbability:
		if m.info.GrafanaURL == "" {
			m.info.GrafanaURL = "https://grafana-open-cluster-management-observability.apps." + m.hub + ".example.com"
		} else {
			m.info.GrafanaURL = ""
		}
		r.info.current.incr()
	}
}

// sendInfo sends the info when it changed: its first is 0.1.
func (a *ghAgent) sendInfo() error {
	r := a.run
	if !r.info.shouldSend() {
		return nil
	}
	info := a.info.info
	if r.noClusterID {
		info.ClusterID = ""
		a.stats.InfosWithoutClusterID++
	}
	data, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("encode %s: %w", TypeGHHubInfo, err)
	}
	a.send(ghEvent{typ: TypeGHHubInfo, version: r.info.current, data: data})
	r.info.sent()
	if info.ClusterID != "" {
		a.info.lastID, a.info.lastPayload = info.ClusterID, data
	}
	return nil
}

// ghAlertCounts is wiremodels.SecurityAlertCounts
// (pkg/wire/models/security.go @006a0478, and the Source of its newer text
// the manager stores): zero counts are left out.
type ghAlertCounts struct {
	Low       int    `json:"low,omitempty"`
	Medium    int    `json:"medium,omitempty"`
	High      int    `json:"high,omitempty"`
	Critical  int    `json:"critical,omitempty"`
	DetailURL string `json:"detail_url,omitempty"`
	Source    string `json:"source,omitempty"`
}

// ghAlertModel is the hub's ACS Central, polled every ghAlertEvery ticks
// (stackrox_syncer.go @569afb53, GET /v1/alerts/summary/counts).
type ghAlertModel struct {
	source string // "<namespace>/<name>" of the Central
	counts AlertCounts
	last   AlertCounts
	sent   bool
}

func newGHAlertModel(hub string) *ghAlertModel {
	return &ghAlertModel{source: "stackrox/stackrox-central-services", counts: AlertCounts{
		DetailURL: "https://central-stackrox.apps." + hub + ".example.com/main/violations",
	}}
}

// evolve changes some of the counts, often to 0.
func (m *ghAlertModel) evolve(rng *rand.Rand) {
	for _, n := range []*int{&m.counts.Low, &m.counts.Medium, &m.counts.High, &m.counts.Critical} {
		if rng.IntN(2) == 0 {
			*n = rng.IntN(4) * rng.IntN(6)
		}
	}
}

// sendAlerts sends the counts at every poll, changed or not: increment,
// send, next, so the first is 0.1, then 1.2, 2.3, …
func (a *ghAgent) sendAlerts() error {
	r := a.run
	if a.alerts == nil || (r.round-r.start)%ghAlertEvery != 0 {
		return nil
	}
	c := a.alerts.counts
	data, err := json.Marshal(ghAlertCounts{Low: c.Low, Medium: c.Medium, High: c.High, Critical: c.Critical,
		DetailURL: c.DetailURL, Source: a.alerts.source})
	if err != nil {
		return fmt.Errorf("encode %s: %w", TypeGHAlertCounts, err)
	}
	r.alerts.incr()
	a.send(ghEvent{typ: TypeGHAlertCounts, version: r.alerts, data: data})
	r.alerts.next()
	a.alerts.last, a.alerts.sent = c, true
	return nil
}

// ghMigrationStatus is migration.MigrationStatusBundle (id 53159518626):
// the migration's id and stage go in extensions, every key is omitempty.
type ghMigrationStatus struct {
	ErrMessage      string            `json:"errMessage,omitempty"`
	Resync          bool              `json:"resync,omitempty"`
	ManagedClusters []string          `json:"managedClusters,omitempty"`
	ClusterErrors   map[string]string `json:"clusterErrors,omitempty"`
	FailedClusters  []string          `json:"failedClusters,omitempty"`
}

// ghMigrationStages are the stages a migration goes through on its source
// hub (migrationv1alpha1.Phase*).
var ghMigrationStages = []string{"Validating", "Initializing", "Deploying", "Registering", "Cleaning"}

// ghMigrations is the hub's migrations of clusters to another hub: one at
// a time, a stage per round, each reported once (ReportMigrationStatus in
// agent/pkg/spec/migration/migration_from_syncer.go @56e467ca).
type ghMigrations struct {
	id       string
	stage    int // the next stage of the running migration
	running  bool
	clusters []string
	// reports are those of the current round.
	reports []ghMigrationReport
	// rows are what stb.cluster_migrations must hold: by migration id
	// and stage, the last report, since the last resync report.
	rows                map[string]map[string]Migration
	lastID, lastStage   string
	migrations, resyncs int
}

type ghMigrationReport struct {
	id, stage string
	status    ghMigrationStatus
	// reset: a new migration validating resets the version.
	reset bool
}

func (m *ghMigrations) evolve(rng *rand.Rand, a *ghAgent, t tick) {
	m.reports = nil
	if t.restarted {
		m.running = false // the agent's migration state went with it
		if len(m.rows) > 0 && rng.Float64() < ghMigrationResyncProbability {
			m.reports = append(m.reports, ghMigrationReport{id: m.lastID, stage: m.lastStage, status: ghMigrationStatus{Resync: true}})
		}
	}
	if cs := a.clusters.clusters; !m.running && len(cs) >= 2 && rng.Float64() < ghMigrationProbability {
		m.running, m.stage, m.id = true, 0, newUUID(rng)
		m.clusters = []string{cs[rng.IntN(len(cs))].name}
		if other := cs[rng.IntN(len(cs))].name; other != m.clusters[0] {
			m.clusters = append(m.clusters, other)
		}
	}
	if !m.running {
		return
	}
	stage := ghMigrationStages[m.stage]
	rep := ghMigrationReport{id: m.id, stage: stage, reset: m.stage == 0}
	if m.stage == 0 {
		rep.status.ManagedClusters = m.clusters // only validating lists them
	}
	m.stage++
	if m.stage > 1 && rng.Float64() < ghMigrationErrorProbability {
		rep.status.ErrMessage = "stage " + stage + " failed: the target hub did not answer in time"
		rep.status.ClusterErrors = map[string]string{m.clusters[0]: "klusterlet is not available"}
		if stage == "Registering" {
			rep.status.FailedClusters = m.clusters
		}
		m.running = false
	}
	if m.stage == len(ghMigrationStages) {
		m.running = false
	}
	m.reports = append(m.reports, rep)
}

// sendMigrations sends the round's reports: increment, send, next; the
// version starts again at 0 when a new migration validates.
func (a *ghAgent) sendMigrations() error {
	r, m := a.run, &a.mig
	for _, rep := range m.reports {
		if rep.reset {
			r.migration = ghVersion{}
			m.migrations++
		}
		data, err := json.Marshal(rep.status)
		if err != nil {
			return fmt.Errorf("encode %s: %w", TypeGHMigration, err)
		}
		r.migration.incr()
		a.send(ghEvent{typ: TypeGHMigration, version: r.migration, data: data, ext: map[string]string{
			ghExtMigrationID: rep.id, ghExtMigrationStage: rep.stage, ghExtClusterName: ghGlobalHubClusterName,
		}})
		r.migration.next()
		if rep.status.Resync {
			clear(m.rows)
			m.resyncs++
			continue
		}
		if m.rows[rep.id] == nil {
			m.rows[rep.id] = map[string]Migration{}
		}
		m.rows[rep.id][rep.stage] = Migration{ErrorMessage: rep.status.ErrMessage, Payload: data}
		m.lastID, m.lastStage = rep.id, rep.stage
	}
	return nil
}
