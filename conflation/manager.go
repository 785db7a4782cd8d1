package conflation

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stbridge/stb/pkg/backoff"
	"github.com/stbridge/stb/pkg/bundle"
)

// MergeFunc folds a newer delta payload into an older one (later wins) and
// returns the result. It may modify older but not newer.
type MergeFunc = func(older, newer any) any

// Config configures a Manager.
type Config struct {
	// Types lists the bundle types in priority order: a unit serves the
	// first ready one.
	Types []bundle.TypeInfo
	// Merge holds, per delta type, how to fold deltas together once a
	// hub's waiting deltas exceed MaxDeltaBytes.
	Merge map[string]MergeFunc
	// MaxDeltaBytes is the size of a hub's waiting deltas above which they
	// are merged into one; 0 never merges.
	MaxDeltaBytes int
	// Decode decodes the deltas to merge, each handed whole, its raw data
	// and its family's Attrs (bundles come from the reader undecoded;
	// dbsyncers.Registry.Decode). A delta
	// whose data does not decode, or every undecoded one when Decode is
	// nil, is not merged: the worker dead-letters it when it writes it.
	Decode bundle.DecodeFunc
	// DependencyTimeout is how long a bundle may wait for its dependency
	// before it is handed out as an expired job (to be dead-lettered); 0
	// waits forever.
	DependencyTimeout time.Duration
	// NoConflation turns conflation off: every bundle is queued and
	// written on its own, in arrival order, as a per-record sink would.
	// It exists as the baseline that benchmarks compare against.
	NoConflation bool
	// Backoff between retries of a transiently failing type; zero is
	// DefaultBackoff.
	Backoff backoff.Exponential
	// IdleTimeout is how long a unit that holds nothing and has nothing in
	// flight stays in memory after its last bundle or write; WakeAll then
	// evicts it, keeping only its versions in a compact form that a new
	// unit of the hub starts from. 0 keeps units forever.
	IdleTimeout time.Duration
	// ResyncAfter is how long a bundle may wait for a version of its
	// dependency that its unit never read (lost, compacted away, sent
	// before a delete or reset) before WakeAll asks for a resync of the
	// dependency's type through OnResync; 0, or a nil OnResync, never
	// asks (and counts nothing in stb_conflation_resyncs_total).
	ResyncAfter time.Duration
	// ResyncInterval is the least time between two requests for one hub
	// and type.
	ResyncInterval time.Duration
	// OnResync receives the resync requests of a WakeAll pass, outside
	// every lock; it must not block.
	OnResync func([]Resync)
	// OnEvict, when set, is called after a WakeAll pass that evicted n > 0
	// units, outside every lock: the bridge gives their memory back to the
	// operating system after large evictions.
	OnEvict func(n int)
	// Linger is how long a unit that takes a bundle read from a partition
	// still far behind its end (CatchingUp) waits before it becomes ready,
	// so that a catch-up writes each hub's state about once per type
	// rather than every intermediate bundle (linger.go). 0, or a nil
	// CatchingUp, never lingers; with NoConflation nothing lingers.
	Linger time.Duration
	// CatchingUp reports whether the partition a bundle was read from is
	// still far behind its end (the transport reader's Behind), and that
	// end: the offset after the last message the partition held when the
	// bundle was read. It is called once per Insert, without locks held,
	// and must be cheap.
	CatchingUp func(o bundle.Origin) (end int64, behind bool)
	// LingerMaxBytes bounds lingering by memory: with more bytes held
	// (HeldBytes) no unit starts to linger and every lingering one is
	// released, so that lingering never holds the reader at its
	// backpressure threshold. 0 is no bound.
	LingerMaxBytes int64
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Registerer receives the conflation metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// DefaultBackoff is 100ms doubling up to 30s.
var DefaultBackoff = backoff.Exponential{Min: 100 * time.Millisecond, Max: 30 * time.Second}

// Validate checks the configuration; it changes nothing. A zero Backoff
// and a nil Now stand for DefaultBackoff and time.Now.
func (c Config) Validate() error {
	if len(c.Types) == 0 {
		return fmt.Errorf("conflation: no bundle types")
	}
	seen := map[string]bool{}
	for _, t := range c.Types {
		if seen[t.Name] {
			return fmt.Errorf("conflation: type %q listed twice", t.Name)
		}
		if t.Rule != bundle.NoDependency && !seen[t.DependsOn] {
			return fmt.Errorf("conflation: type %q depends on %q, which must come before it", t.Name, t.DependsOn)
		}
		seen[t.Name] = true
	}
	if err := c.withDefaults().Backoff.Validate(); err != nil {
		return fmt.Errorf("conflation: %w", err)
	}
	if c.MaxDeltaBytes < 0 {
		return fmt.Errorf("conflation: negative max delta bytes")
	}
	if c.IdleTimeout < 0 || c.ResyncAfter < 0 || c.ResyncInterval < 0 {
		return fmt.Errorf("conflation: negative idle timeout, resync wait or resync interval")
	}
	if c.Linger < 0 || c.LingerMaxBytes < 0 {
		return fmt.Errorf("conflation: negative linger or linger bytes")
	}
	if len(c.Types) > maxTypes {
		return fmt.Errorf("conflation: %d bundle types, at most %d", len(c.Types), maxTypes)
	}
	return nil
}

// withDefaults returns c with the defaults of the fields left zero.
func (c Config) withDefaults() Config {
	if c.Backoff == (backoff.Exponential{}) {
		c.Backoff = DefaultBackoff
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Manager finds the unit of a hub, creating it on the hub's first bundle,
// and owns the ready queue.
//
// Lock order: Manager.mu is never held while a unit's mutex is taken.
type Manager struct {
	cfg   Config
	index map[string]int
	// slotTypes are the types as every unit's slots share them (slot).
	slotTypes []slotType
	queue     *ReadyQueue
	metrics   *metrics
	held      atomic.Int64
	linger    lingerSet

	mu    sync.RWMutex
	units map[string]*Unit
	// dormant holds the versions of hubs whose unit was evicted, or that
	// were restored from the database before any bundle of theirs came:
	// a hub's new unit starts from them, so that neither eviction nor a
	// restart lets an older bundle through.
	dormant map[string][]dormantSlot

	// dropping counts, per revoked partition, the DropPartition calls not
	// yet ended; nDropping is their total, read on every report.
	dropMu    sync.Mutex
	dropping  map[partitionKey]int
	nDropping atomic.Int32
}

type partitionKey struct {
	topic     string
	partition int32
}

// NewManager returns a manager with an empty ready queue.
func NewManager(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m := &Manager{
		cfg:     cfg,
		index:   make(map[string]int, len(cfg.Types)),
		queue:   NewReadyQueue(),
		units:   map[string]*Unit{},
		dormant: map[string][]dormantSlot{},

		dropping: map[partitionKey]int{},
	}
	names := make([]string, len(cfg.Types))
	for i, t := range cfg.Types {
		m.index[t.Name] = i
		names[i] = t.Name
	}
	m.slotTypes = make([]slotType, len(cfg.Types))
	for i, t := range cfg.Types {
		m.slotTypes[i] = slotType{info: t, dep: -1, merge: cfg.Merge[t.Name]}
		if t.Rule != bundle.NoDependency {
			m.slotTypes[i].dep = m.index[t.DependsOn]
		}
	}
	metrics, err := newMetrics(cfg.Registerer, names, m)
	if err != nil {
		return nil, err
	}
	m.metrics = metrics
	return m, nil
}

// Queue returns the ready queue the dispatcher pops.
func (m *Manager) Queue() *ReadyQueue { return m.queue }

// HeldBytes returns the bytes all bundles held in units keep in memory
// (bundle.Bundle.HeldBytes).
func (m *Manager) HeldBytes() int64 { return m.held.Load() }

// Insert hands b to its hub's unit and queues the unit if it became ready.
// It never blocks on the database or the dispatcher.
//
// With Linger, a bundle of a partition far behind its end makes its unit
// wait before it becomes ready (linger.go).
func (m *Manager) Insert(b *bundle.Bundle) {
	linger, end, caughtUp, over := m.lingers(b.Origin)
	for {
		u := m.unit(b.Hub)
		ready, retired, waits := u.insert(b, linger, end)
		if waits {
			m.linger.add(partitionKey{b.Origin.Topic, b.Origin.Partition}, u, end)
		}
		if m.settle(u, ready, retired) {
			break
		}
	}
	m.settleLingering(b.Origin, caughtUp, over)
}

// settle ends an Insert or a restore on u: a ready unit is queued; a
// retired one (evicted or forgotten after it was looked up) took nothing,
// is buried, and the caller tries again with the hub's new unit (false).
func (m *Manager) settle(u *Unit, ready, retired bool) (done bool) {
	if retired {
		m.bury(u)
		return false
	}
	if ready {
		m.queue.Push(u)
	}
	return true
}

// Report records a job's outcome on its unit and queues the unit again if
// it is ready; it returns after how long a retry falls due (0 for none), for
// the caller to call Wake then.
func (m *Manager) Report(job *Job, out Outcome) time.Duration {
	ready, retryIn := job.Unit.Report(job, out)
	if out == Transient && m.nDropping.Load() > 0 {
		// The failed job may have put bundles of a revoked partition back.
		for _, k := range m.droppingPartitions() {
			job.Unit.dropPartition(k.topic, k.partition)
		}
	}
	if ready {
		m.queue.Push(job.Unit)
	}
	return retryIn
}

// Wake queues u if the passing of time made it ready (a retry fell due).
func (m *Manager) Wake(u *Unit) {
	if u.wake() {
		m.queue.Push(u)
	}
}

// WakeAll queues every unit that the passing of time made ready: retries
// that fell due and bundles whose dependency wait expired; and, with an
// IdleTimeout, evicts the units idle that long. The dispatcher calls it
// periodically; it takes each unit's lock briefly, one at a time.
func (m *Manager) WakeAll() {
	m.mu.RLock()
	us := make([]*Unit, 0, len(m.units))
	for _, u := range m.units {
		us = append(us, u)
	}
	m.mu.RUnlock()
	now := m.cfg.Now()
	evicted := 0
	var resyncs []Resync
	for _, u := range us {
		ready, retired, rs := u.tick(now, m.cfg.IdleTimeout)
		resyncs = append(resyncs, rs...)
		switch {
		case ready:
			m.queue.Push(u)
		case retired:
			m.bury(u)
			evicted++
		}
	}
	if len(resyncs) > 0 {
		for _, r := range resyncs {
			m.metrics.types[m.index[r.Type]].resyncs.Inc()
		}
		if m.cfg.OnResync != nil {
			m.cfg.OnResync(resyncs)
		}
	}
	m.pruneLingering(now)
	if evicted > 0 {
		m.metrics.evicted.Add(float64(evicted))
		if m.cfg.OnEvict != nil {
			m.cfg.OnEvict(evicted)
		}
	}
}

// Restore records a version already in the database, so that replayed
// older bundles are dropped as stale and dependencies count it as
// processed. It is called at start-up, before the first Insert, and again
// when partitions are assigned (another replica may have written them
// meanwhile); a bundle that was waiting for the restored version becomes
// ready.
//
// A hub without a unit gets none: its versions are kept in the compact
// form an evicted unit leaves, for the unit its first bundle creates.
func (m *Manager) Restore(hub, typ string, v bundle.Version) {
	i, ok := m.index[typ]
	if !ok {
		return
	}
	for {
		m.mu.Lock()
		u, ok := m.units[hub]
		if !ok {
			m.dormant[hub] = restoreDormant(m.dormant[hub], i, v)
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		if ready, retired := u.restore(i, v); m.settle(u, ready, retired) {
			return
		}
	}
}

// ForgetHub drops everything the bridge holds of hub, for a hub deleted or
// reset in the database: its unit's unwritten bundles are released (a
// write in flight finishes, and its bundles are released when reported)
// and its versions are forgotten, evicted or not. Bundles of the hub read
// afterwards start a new unit that knows no version; the caller restores
// what the database holds for the hub after the delete (its tombstone).
func (m *Manager) ForgetHub(hub string) {
	m.mu.Lock()
	u := m.units[hub]
	delete(m.units, hub)
	delete(m.dormant, hub)
	m.mu.Unlock()
	if u != nil {
		u.forget()
	}
}

// Dormant returns the number of hubs known only by their versions: evicted,
// or restored and not heard from since.
func (m *Manager) Dormant() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.dormant)
}

// IsDormant reports whether hub is known only by its versions.
func (m *Manager) IsDormant(hub string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.dormant[hub]
	return ok
}

// bury removes a retired unit from the index, keeping its versions as the
// hub's dormant ones unless it was forgotten. It does nothing when the
// index already holds another unit for the hub (someone else buried it).
func (m *Manager) bury(u *Unit) {
	remains, forgotten := u.remainsAfterRetire()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.units[u.Hub] != u {
		return
	}
	delete(m.units, u.Hub)
	if !forgotten && len(remains) > 0 {
		m.dormant[u.Hub] = remains
	}
}

// DropPartition forgets the bundles read from a partition that was revoked
// and that no worker has taken yet (docs/design.md, Scaling out): the partition's new
// owner reads them again from the committed position, which is behind
// them. What is in flight finishes; the caller waits for it. Until the
// returned end is called, bundles of the partition that a failed write
// hands back are dropped as well, so what is outstanding of the partition
// only goes down while the caller waits.
func (m *Manager) DropPartition(topic string, partition int32) (end func()) {
	k := partitionKey{topic, partition}
	m.dropMu.Lock()
	m.dropping[k]++
	m.nDropping.Add(1)
	m.dropMu.Unlock()
	for _, u := range m.Units() {
		u.dropPartition(topic, partition)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			m.dropMu.Lock()
			if m.dropping[k]--; m.dropping[k] == 0 {
				delete(m.dropping, k)
			}
			m.nDropping.Add(-1)
			m.dropMu.Unlock()
		})
	}
}

func (m *Manager) droppingPartitions() []partitionKey {
	m.dropMu.Lock()
	defer m.dropMu.Unlock()
	ks := make([]partitionKey, 0, len(m.dropping))
	for k := range m.dropping {
		ks = append(ks, k)
	}
	return ks
}

// Lookup returns the unit of hub, if it exists.
func (m *Manager) Lookup(hub string) (*Unit, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	u, ok := m.units[hub]
	return u, ok
}

// Len returns the number of units.
func (m *Manager) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.units)
}

// Range calls f for every unit, in no order, until f returns false. The
// units are listed under the manager's read lock and f is called after
// it is released, so that f may take a unit's lock without holding up
// the insertion of a new hub.
func (m *Manager) Range(f func(*Unit) bool) {
	m.mu.RLock()
	us := make([]*Unit, 0, len(m.units))
	for _, u := range m.units {
		us = append(us, u)
	}
	m.mu.RUnlock()
	for _, u := range us {
		if !f(u) {
			return
		}
	}
}

// Units returns all units sorted by hub.
func (m *Manager) Units() []*Unit {
	m.mu.RLock()
	us := make([]*Unit, 0, len(m.units))
	for _, u := range m.units {
		us = append(us, u)
	}
	m.mu.RUnlock()
	sort.Slice(us, func(i, j int) bool { return us[i].Hub < us[j].Hub })
	return us
}

func (m *Manager) unit(hub string) *Unit {
	m.mu.RLock()
	u, ok := m.units[hub]
	m.mu.RUnlock()
	if ok {
		return u
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if u, ok := m.units[hub]; ok {
		return u
	}
	u = &Unit{Hub: hub, m: m, slots: make([]slot, len(m.slotTypes)), lastActive: m.cfg.Now()}
	for i := range m.slotTypes {
		u.slots[i].slotType, u.slots[i].activity = &m.slotTypes[i], &idle
	}
	if d, ok := m.dormant[hub]; ok {
		for _, ds := range d {
			s := &u.slots[ds.slot]
			s.seen, s.hasSeen = ds.seen, ds.flags&hasSeen != 0
			s.processed, s.hasProcessed = ds.processed, ds.flags&hasProcessed != 0
		}
		delete(m.dormant, hub)
	}
	m.units[hub] = u
	return u
}
