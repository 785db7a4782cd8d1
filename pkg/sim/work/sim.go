package work

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Agent is the simulator's --agent value for this family.
const Agent = "work"

// DefaultTopic is the topic sdk-go's Kafka transport sent statuses to.
const DefaultTopic = "agentevents"

// Config is one simulation.
type Config struct {
	// Clusters is the number of clusters, each with one agent; Resources
	// the works per cluster; Sources the sources they come from.
	Clusters, Resources, Sources int
	// Rounds is the number of rounds; in each every agent reports the
	// status of about a third of its resources.
	Rounds int
	Seed   uint64
	// Topic is the topic to publish to (DefaultTopic when empty); Prefix
	// starts the cluster names ("work" when empty).
	Topic, Prefix string
	// StatusBytes is the rough size of a status (default 2,000).
	StatusBytes int
	// RestartProbability is the chance per agent and round that it
	// restarts and sends every status again (a resync response);
	// DuplicateProbability that a status is sent twice;
	// LateProbability that an older status of a resource is sent again
	// after a newer; DeleteProbability that a resource is deleted (and a
	// new one created in its place). Zero means the default; negative
	// means never.
	RestartProbability, DuplicateProbability, LateProbability, DeleteProbability float64
	// Structured sends every other cluster's events in structured mode.
	Structured bool
	// Start is the agents' clock at the first event (sequence ids are
	// made of it); zero means now.
	Start time.Time
}

func (c Config) withDefaults() Config {
	def := func(p *float64, d float64) {
		switch {
		case *p == 0:
			*p = d
		case *p < 0:
			*p = 0
		}
	}
	def(&c.RestartProbability, 0.05)
	def(&c.DuplicateProbability, 0.05)
	def(&c.LateProbability, 0.05)
	def(&c.DeleteProbability, 0.03)
	if c.Clusters == 0 {
		c.Clusters = 10
	}
	if c.Resources == 0 {
		c.Resources = 20
	}
	if c.Sources == 0 {
		c.Sources = 2
	}
	if c.Rounds == 0 {
		c.Rounds = 10
	}
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	if c.Prefix == "" {
		c.Prefix = "work"
	}
	if c.StatusBytes == 0 {
		c.StatusBytes = 2000
	}
	if c.Start.IsZero() {
		c.Start = time.Now()
	}
	return c
}

// Validate checks the sizes.
func (c Config) Validate() error {
	if c.Clusters < 0 || c.Resources < 0 || c.Sources < 0 || c.Rounds < 0 || c.StatusBytes < 0 {
		return errors.New("work simulation: clusters, resources, sources, rounds and status bytes must not be negative")
	}
	return nil
}

// Row is one resource's expected row of work.resource_status.
type Row struct {
	Source          string `json:"source"`
	ResourceID      string `json:"resourceId"`
	Cluster         string `json:"cluster"`
	ResourceVersion int64  `json:"resourceVersion"`
	SequenceID      string `json:"sequenceId"`
	Deleted         bool   `json:"deleted"`
	StatusHash      string `json:"statusHash"`
}

// Expected is what a simulation sent and the state it must leave.
type Expected struct {
	// Agent is always Agent: it tells this file from the other agents'.
	Agent      string   `json:"agent"`
	Topic      string   `json:"topic"`
	Seed       uint64   `json:"seed"`
	Clusters   []string `json:"clusters"`
	Messages   int      `json:"messages"`
	Restarts   int      `json:"restarts"`
	Duplicates int      `json:"duplicates"`
	LateCopies int      `json:"lateCopies"`
	Deletes    int      `json:"deletes"`
	Structured int      `json:"structured"`
	Rows       []Row    `json:"rows"`
}

// Publish sends one message.
type Publish func(ctx context.Context, msg *kafka.Message) error

// resource is an agent's work: its last status sent and the messages of
// its earlier ones, for late copies.
type resource struct {
	source, id string
	generation int64
	sent       []*kafka.Message
	last       Row
	gone       bool
}

// Run simulates cfg's agents, publishing with publish, and returns the
// expected final state.
func Run(ctx context.Context, cfg Config, publish Publish, progress func(sent int)) (*Expected, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5bd1e995))
	exp := &Expected{Agent: Agent, Topic: cfg.Topic, Seed: cfg.Seed}
	clock := cfg.Start
	step := int64(0)
	nextSeq := func() (string, time.Time) {
		// One agent clock for all: ids only need to grow per agent.
		step++
		if step == 4096 {
			step = 0
			clock = clock.Add(time.Millisecond)
		}
		return SequenceID(clock, step), clock
	}
	uid := 0
	newResource := func(cluster int, r int) *resource {
		uid++
		return &resource{source: fmt.Sprintf("source-%d", r%cfg.Sources), id: fmt.Sprintf("%08x-%04x-4000-8000-%012x", cfg.Seed&0xffffffff, cluster, uid), generation: 1}
	}
	clusters := make([][]*resource, cfg.Clusters)
	for c := range clusters {
		exp.Clusters = append(exp.Clusters, clusterName(cfg.Prefix, c))
		for r := 0; r < cfg.Resources; r++ {
			clusters[c] = append(clusters[c], newResource(c, r))
		}
	}
	send := func(msg *kafka.Message) error {
		if err := publish(ctx, msg); err != nil {
			return err
		}
		exp.Messages++
		if progress != nil {
			progress(exp.Messages)
		}
		return nil
	}
	report := func(c int, res *resource, typ string, deleted bool) error {
		seq, at := nextSeq()
		name := clusterName(cfg.Prefix, c)
		st := Status{Type: typ, ID: fmt.Sprintf("%s-%s", res.id, seq), Cluster: name, Source: res.source, ResourceID: res.id,
			Generation: res.generation, SequenceID: seq, Deleted: deleted, Time: at, Padding: cfg.StatusBytes}
		ev, hash := st.Event()
		structured := cfg.Structured && c%2 == 1
		msg, err := Message(ev, cfg.Topic, structured)
		if err != nil {
			return err
		}
		if structured {
			exp.Structured++
		}
		if err := send(msg); err != nil {
			return err
		}
		if rng.Float64() < cfg.DuplicateProbability {
			exp.Duplicates++
			if err := send(msg); err != nil {
				return err
			}
		}
		if len(res.sent) > 0 && rng.Float64() < cfg.LateProbability {
			exp.LateCopies++
			if err := send(res.sent[rng.IntN(len(res.sent))]); err != nil {
				return err
			}
		}
		res.sent = append(res.sent, msg)
		if len(res.sent) > 4 {
			res.sent = res.sent[1:]
		}
		res.last = Row{Source: res.source, ResourceID: res.id, Cluster: name, ResourceVersion: res.generation, SequenceID: seq, Deleted: deleted, StatusHash: hash}
		return nil
	}
	var gone []*resource
	for round := 0; round < cfg.Rounds; round++ {
		for c := range clusters {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if round > 0 && rng.Float64() < cfg.RestartProbability {
				// A restarted agent reports every work it has again.
				exp.Restarts++
				for _, res := range clusters[c] {
					if err := report(c, res, ResyncResponse, false); err != nil {
						return nil, err
					}
				}
			}
			for r, res := range clusters[c] {
				switch {
				case round > 0 && rng.Float64() < cfg.DeleteProbability:
					exp.Deletes++
					if err := report(c, res, UpdateRequest, true); err != nil {
						return nil, err
					}
					res.gone = true
					gone = append(gone, res)
					clusters[c][r] = newResource(c, r)
					if err := report(c, clusters[c][r], UpdateRequest, false); err != nil {
						return nil, err
					}
				case round == 0 || rng.IntN(3) == 0:
					if round > 0 && rng.IntN(4) == 0 {
						res.generation++
					}
					if err := report(c, res, UpdateRequest, false); err != nil {
						return nil, err
					}
				}
			}
		}
		// Late copies of deleted works' older statuses: the tombstone
		// must hold.
		for _, res := range gone {
			if len(res.sent) > 1 && rng.Float64() < cfg.LateProbability {
				exp.LateCopies++
				if err := send(res.sent[rng.IntN(len(res.sent)-1)]); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, res := range gone {
		exp.Rows = append(exp.Rows, res.last)
	}
	for c := range clusters {
		for _, res := range clusters[c] {
			exp.Rows = append(exp.Rows, res.last)
		}
	}
	return exp, nil
}

// WriteFile writes exp as JSON.
func (e *Expected) WriteFile(path string) error {
	data, err := json.MarshalIndent(e, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// ReadExpected reads a file WriteFile wrote; ok is false (and the error
// nil) when the file is another agent's expected state.
func ReadExpected(path string) (exp *Expected, ok bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("read expected state: %w", err)
	}
	var head struct {
		Agent string `json:"agent"`
	}
	if err := json.Unmarshal(data, &head); err != nil || head.Agent != Agent {
		return nil, false, nil
	}
	exp = &Expected{}
	if err := json.Unmarshal(data, exp); err != nil {
		return nil, false, fmt.Errorf("read expected state from %s: %w", path, err)
	}
	return exp, true, nil
}
