package cne

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
)

// The PTP events a node's cloud-event-proxy publishes, spelled from
// redhat-cne/sdk-go (the O-RAN Cloud Native Events model), not from the
// bridge: the types of pkg/event/ptp/types.go (O-RAN v3 names) and the
// resources of pkg/event/ptp/resource.go, which the publisher appends to
// "/cluster/node/<node>" to make a value's address.
const (
	typeSyncStateChange        = "event.sync.sync-status.synchronization-state-change" // SyncStateChange
	typePtpStateChange         = "event.sync.ptp-status.ptp-state-change"              // PtpStateChange
	typeOsClockSyncStateChange = "event.sync.sync-status.os-clock-sync-state-change"   // OsClockSyncStateChange
	typeGnssStateChange        = "event.sync.gnss-status.gnss-state-change"            // GnssStateChange
	typePtpClockClassChange    = "event.sync.ptp-status.ptp-clock-class-change"        // PtpClockClassChange

	resourceSyncState  = "/sync/sync-status/sync-state"          // SyncStatusState
	resourceLockState  = "/sync/ptp-status/lock-state"           // PtpLockState
	resourceOsClock    = "/sync/sync-status/os-clock-sync-state" // OsClockSyncState
	resourceGnss       = "/sync/gnss-status/gnss-sync-status"    // GnssSyncStatus
	resourceClockClass = "/sync/ptp-status/clock-class"          // PtpClockClass (O-RAN v3)
	// resourceClockClassV1 is the clock class's resource in the v1 API,
	// before O-RAN v3 renamed it (PtpClockClassV1, "Support V1").
	resourceClockClassV1 = "/sync/ptp-status/ptp-clock-class-change"
)

// Config says what to simulate.
type Config struct {
	// Nodes is the number of nodes; Rounds how many times each publishes.
	Nodes, Rounds int
	// Seed makes a run repeatable.
	Seed int64
	// Start is the nodes' clock at the first round; zero is now.
	Start time.Time
	// Topic is the Kafka topic; "" is DefaultTopic.
	Topic string
	// Probabilities per node and round (0 means the default, negative
	// never): a restart (every state sent again), a clock step back, a
	// duplicate of the message just sent, a late copy of an earlier one,
	// a bad event (a dead letter).
	Restart, ClockStep, Duplicate, LateCopy, Bad float64
}

// Defaults.
const (
	DefaultTopic     = "status"
	DefaultRestart   = 0.05
	DefaultClockStep = 0.03
	DefaultDuplicate = 0.05
	DefaultLateCopy  = 0.05
	DefaultBad       = 0.01
	// clockStepBack is how far a stepped clock goes back at most.
	clockStepBack = 100 * time.Millisecond
)

func (c Config) withDefaults() Config {
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	if c.Start.IsZero() {
		c.Start = time.Now().UTC()
	}
	for _, p := range []struct {
		v *float64
		d float64
	}{{&c.Restart, DefaultRestart}, {&c.ClockStep, DefaultClockStep}, {&c.Duplicate, DefaultDuplicate}, {&c.LateCopy, DefaultLateCopy}, {&c.Bad, DefaultBad}} {
		if *p.v == 0 {
			*p.v = p.d
		}
	}
	return c
}

// Validate checks c.
func (c Config) Validate() error {
	if c.Nodes < 1 || c.Rounds < 1 {
		return fmt.Errorf("cne simulation: want at least one node and one round, have %d and %d", c.Nodes, c.Rounds)
	}
	return nil
}

// Message is one event as a node's publisher sends it.
type Message struct {
	Topic, Node string
	Event       event.Event
	// Structured says the event goes in structured mode (the whole event
	// in the message value) rather than binary (ce_* headers).
	Structured bool
}

// Publisher sends messages in order; a node's must keep their order.
type Publisher interface {
	Publish(ctx context.Context, m Message) error
}

// Flusher is implemented by publishers that buffer.
type Flusher interface {
	Flush(ctx context.Context) error
}

// Row is the value a key must end with.
type Row struct {
	Node      string `json:"node"`
	ValueType string `json:"valueType"`
	// Text is value_text: the enumeration or the decimal as written.
	Text   string `json:"text"`
	TimeNS int64  `json:"timeNs"`
	seq    int
}

// Expected is what a run sent and what the database must hold.
type Expected struct {
	// Agent is always "cne": it tells this file from sim.Expected's.
	Agent    string   `json:"agent"`
	Seed     int64    `json:"seed"`
	Topic    string   `json:"topic"`
	Nodes    []string `json:"nodes"`
	Messages int      `json:"messages"`
	// Counts of the misbehaviours sent.
	Restarts   int `json:"restarts"`
	ClockSteps int `json:"clockSteps"`
	Duplicates int `json:"duplicates"`
	LateCopies int `json:"lateCopies"`
	// Behind counts values sent with a time before the one already sent
	// for their key (late copies, clocks stepped back): not stored.
	Behind int `json:"behind"`
	// DeadLetters is the number of bad events sent, each one dead letter.
	DeadLetters int `json:"deadLetters"`
	// Rows maps "type address data_type" to the value it must hold.
	Rows map[string]Row `json:"rows"`
}

// AgentName is Expected.Agent.
const AgentName = "cne"

// Key returns the key of Rows for a value.
func Key(typ, address, dataType string) string { return typ + " " + address + " " + dataType }

// WriteFile writes e as JSON.
func (e *Expected) WriteFile(path string) error {
	b, err := json.MarshalIndent(e, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// ReadExpected reads the file at path; ok is false when it is not a cne
// simulation's (another agent's expected state).
func ReadExpected(path string) (_ *Expected, ok bool, _ error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	var e Expected
	if err := json.Unmarshal(b, &e); err != nil || e.Agent != AgentName {
		return nil, false, nil
	}
	return &e, true, nil
}

// resource is one thing a node reports, as cloud-event-proxy publishes it.
type resource struct {
	typ, path    string
	states       []string // the notification's enumeration; nil: metric only
	metric       bool     // a decimal64.3 metric beside it
	gpsFix       bool     // a second metric at <address>/gpsFix (GNSS)
	metricValues []int64  // what the metric takes; nil: an offset
}

var syncStates = []string{"LOCKED", "HOLDOVER", "FREERUN"}

// resources are what each node reports (sdk-go pkg/event/ptp types and
// resources; GetPTPEventsData: clock class has no notification, the sync
// state no metric).
func resources(v1 bool) []resource {
	class := resourceClockClass
	if v1 {
		class = resourceClockClassV1
	}
	return []resource{
		{typ: typePtpStateChange, path: resourceLockState, states: syncStates, metric: true},
		{typ: typeOsClockSyncStateChange, path: resourceOsClock, states: syncStates, metric: true},
		{typ: typeSyncStateChange, path: resourceSyncState, states: syncStates},
		{typ: typePtpClockClassChange, path: class, metric: true, metricValues: []int64{6, 7, 248}},
		{typ: typeGnssStateChange, path: resourceGnss, states: []string{"SYNCHRONIZED", "ACQUIRING-SYNC", "ANTENNA-DISCONNECTED", "FREERUN"}, metric: true, gpsFix: true},
	}
}

// node is one simulated node and its publisher's habits.
type node struct {
	name       string
	v1         bool // v1 field names
	decString  bool // decimal64.3 as a JSON string
	spec       string
	structured bool
	clock      time.Time
	res        []resource
	// sent are the node's messages so far, for late copies.
	sent []Message
}

func newNode(i int, start time.Time) *node {
	n := &node{
		name: fmt.Sprintf("node-%03d.cluster-%d.example.com", i, i%4), v1: i%3 == 0, decString: i%2 == 1,
		spec: event.CloudEventsVersionV1, structured: i%5 == 2, clock: start.Add(time.Duration(i) * time.Millisecond),
	}
	if i%4 == 1 {
		n.spec = event.CloudEventsVersionV03
	}
	n.res = resources(n.v1)
	return n
}

// values returns the data values of resource r in state.
func (n *node) values(r resource, state string, metric int64) []map[string]any {
	addr := "/cluster/node/" + n.name + r.path
	val := func(a, dataType, valueType string, v any) map[string]any {
		if n.v1 {
			return map[string]any{"resource": a, "dataType": dataType, "valueType": valueType, "value": v}
		}
		return map[string]any{"ResourceAddress": a, "data_type": dataType, "value_type": valueType, "value": v}
	}
	dec := func(v int64) any {
		if n.decString {
			return fmt.Sprint(v)
		}
		return v
	}
	var out []map[string]any
	if r.states != nil {
		out = append(out, val(addr, "notification", "enumeration", state))
	}
	if r.metric {
		out = append(out, val(addr, "metric", "decimal64.3", dec(metric)))
	}
	if r.gpsFix {
		out = append(out, val(addr+"/gpsFix", "metric", "decimal64.3", dec(metric%4+2)))
	}
	return out
}

// Run simulates cfg and sends every message to pub.
func Run(ctx context.Context, cfg Config, pub Publisher, progress func(sent int)) (*Expected, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xc0ffee))
	exp := &Expected{Agent: AgentName, Seed: cfg.Seed, Topic: cfg.Topic, Rows: map[string]Row{}}
	nodes := make([]*node, cfg.Nodes)
	for i := range nodes {
		nodes[i] = newNode(i, cfg.Start)
		exp.Nodes = append(exp.Nodes, nodes[i].name)
	}
	seq := 0
	send := func(n *node, m Message, record bool) error {
		if err := pub.Publish(ctx, m); err != nil {
			return fmt.Errorf("publish %s of node %s: %w", m.Event.Type(), n.name, err)
		}
		seq++
		exp.Messages++
		if record {
			n.sent = append(n.sent, m)
			if len(n.sent) > 20 {
				n.sent = n.sent[1:]
			}
		}
		exp.expect(m, seq)
		if progress != nil {
			progress(exp.Messages)
		}
		return nil
	}
	publish := func(n *node, r resource) error {
		state := ""
		if r.states != nil {
			state = r.states[rng.IntN(len(r.states))]
		}
		metric := rng.Int64N(2000) - 1000
		if r.metricValues != nil {
			metric = r.metricValues[rng.IntN(len(r.metricValues))]
		}
		// Each event a little later on the node's clock, in nanoseconds.
		n.clock = n.clock.Add(10*time.Millisecond + time.Duration(rng.IntN(1_000_000)))
		m, err := n.message(cfg.Topic, r.typ, fmt.Sprintf("%s-%d", n.name, seq), n.values(r, state, metric))
		if err != nil {
			return err
		}
		if err := send(n, m, true); err != nil {
			return err
		}
		if rng.Float64() < cfg.Duplicate {
			exp.Duplicates++
			return send(n, m, false)
		}
		return nil
	}
	for range cfg.Rounds {
		for _, n := range nodes {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if rng.Float64() < cfg.ClockStep {
				// PTP steps the clock back: what the node stamps next is
				// earlier than what it stamped before.
				exp.ClockSteps++
				n.clock = n.clock.Add(-time.Duration(rng.Int64N(int64(clockStepBack))))
			}
			todo := []resource{n.res[rng.IntN(len(n.res))]}
			if rng.Float64() < cfg.Restart {
				// cloud-event-proxy starting again publishes every state.
				exp.Restarts++
				todo = n.res
			}
			for _, r := range todo {
				if err := publish(n, r); err != nil {
					return nil, err
				}
			}
			if len(n.sent) > 1 && rng.Float64() < cfg.LateCopy {
				exp.LateCopies++
				if err := send(n, n.sent[rng.IntN(len(n.sent)-1)], false); err != nil {
					return nil, err
				}
			}
			if rng.Float64() < cfg.Bad {
				exp.DeadLetters++
				m, err := n.message(cfg.Topic, typePtpStateChange, fmt.Sprintf("%s-bad-%d", n.name, seq), []map[string]any{})
				if err != nil {
					return nil, err
				}
				if err := send(n, m, false); err != nil {
					return nil, err
				}
			}
		}
	}
	if f, ok := pub.(Flusher); ok {
		if err := f.Flush(ctx); err != nil {
			return nil, err
		}
	}
	return exp, nil
}

// message returns an event of the node's publisher.
func (n *node) message(topic, typ, id string, values []map[string]any) (Message, error) {
	ev := event.New(n.spec)
	ev.SetID(id)
	ev.SetType(typ)
	ev.SetSource("/cluster/node/" + n.name + "/sync")
	ev.SetTime(n.clock)
	version := "1.0"
	if n.v1 {
		version = "v1"
	}
	if err := ev.SetData(event.ApplicationJSON, map[string]any{"version": version, "values": values}); err != nil {
		return Message{}, err
	}
	return Message{Topic: topic, Node: n.name, Event: ev, Structured: n.structured}, nil
}

// expect records what m, the seq-th message, leaves in the database.
func (e *Expected) expect(m Message, seq int) {
	var d struct {
		Values []map[string]any `json:"values"`
	}
	if err := json.Unmarshal(m.Event.Data(), &d); err != nil || len(d.Values) == 0 {
		return // a bad event
	}
	ns := m.Event.Time().UnixNano()
	for _, v := range d.Values {
		str := func(a, b string) string {
			if s, ok := v[a].(string); ok {
				return s
			}
			s, _ := v[b].(string)
			return s
		}
		k := Key(m.Event.Type(), str("ResourceAddress", "resource"), str("data_type", "dataType"))
		text := fmt.Sprint(v["value"])
		if f, ok := v["value"].(float64); ok {
			text = fmt.Sprint(int64(f))
		}
		row := Row{Node: m.Node, ValueType: str("value_type", "valueType"), Text: text, TimeNS: ns, seq: seq}
		old, ok := e.Rows[k]
		switch {
		case !ok || ns > old.TimeNS || (ns == old.TimeNS && seq > old.seq):
			e.Rows[k] = row
		case ns < old.TimeNS:
			e.Behind++
		}
	}
}

// sortedKeys returns the keys of Rows in order.
func (e *Expected) sortedKeys() []string {
	keys := make([]string, 0, len(e.Rows))
	for k := range e.Rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
