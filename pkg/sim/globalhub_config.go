package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults of GlobalHubConfig, applied to its zero-valued fields.
const (
	// DefaultResyncEvery is the number of rounds between two periodic
	// resyncs of the agent's object types. The agent resyncs every 6 h
	// (agent/pkg/status/generic/periodic_syncer.go, defaultResyncInterval)
	// and sends every 5 s, 4,320 sends apart; a simulation of a few dozen
	// rounds would never see one, so the period is compressed.
	DefaultResyncEvery = 10
	// DefaultFrameBytes is the largest generic bundle frame and event batch
	// the agent sends: pkg/bundle/generic/generic_bundle.go, MaxBundleBytes.
	DefaultFrameBytes = 800 * 1024
	// DefaultChunkBytes is the size above which the agent's producer cuts
	// an event's data into chunks: pkg/transport/config/confluent_config.go,
	// MaxSizeToChunk.
	DefaultChunkBytes = 10 * 1024 * 1024
	// DefaultClockSkew is how far a restarted agent's node clock may be
	// behind the one of the run before it: about as far as two nodes of a
	// cluster without a working time service drift apart.
	DefaultClockSkew = 30 * time.Second
)

// The event send modes of GlobalHubConfig.SendMode: the agent's
// --event-send-mode (agent/pkg/status/emitters/event_emitter.go).
const (
	// SendModeBatch sends the events of one interval as one CloudEvent
	// whose data is an array.
	SendModeBatch = "batch"
	// SendModeSingle sends each event as a CloudEvent of its own whose
	// data is the one event object.
	SendModeSingle = "single"
	// SendModeMixed lets every other hub send single events (the second,
	// the fourth, …) and the others batches, as agents configured one by
	// one do.
	SendModeMixed = "mixed"
)

// GlobalHubConfig configures what only the global-hub agent
// (Config.Agent AgentGlobalHub) does. Zero values mean the defaults.
type GlobalHubConfig struct {
	// ResyncEvery is the number of rounds between the periodic resyncs of
	// managedcluster and policy.localspec, counted from the agent's start
	// (which resyncs too). 0 means DefaultResyncEvery; negative, only at
	// the start.
	ResyncEvery int
	// FrameBytes is the largest JSON of one generic bundle frame and of one
	// event batch; a resync of more sends several resync frames. 0 means
	// DefaultFrameBytes. A small value gives several frames with a few
	// objects.
	FrameBytes int
	// ChunkBytes is the size above which an event's data is sent in
	// chunks. 0 means DefaultChunkBytes.
	ChunkBytes int
	// SendMode is how the event types are sent: SendModeBatch ("" too),
	// SendModeSingle or SendModeMixed.
	SendMode string
	// ClockSkew is how far a restarted agent's clock may be behind the
	// clock of its run before: about every other restart sets it back by
	// ClockSkew to twice as much, so that the new run's events carry
	// earlier times than the old run's. 0 means DefaultClockSkew;
	// negative, clocks agree.
	ClockSkew time.Duration
	// Rotate is the shape of upstream's own scale test (multicluster-global-hub
	// doc/simulation/scenario, Scenario 7): every policy of a hub is placed on
	// every cluster of it from the first round, NonCompliant; each later round
	// turns every pair to the other of Compliant and NonCompliant (a
	// "compliance rotation"); nothing else moves at random (pair it with
	// negative Restart, Change, Churn and Placement probabilities). The first
	// hub places its policies on no cluster, as upstream's hub1 did (its policy
	// propagator removed the mock replicated policies), so 10 hubs of 300
	// clusters and 50 policies hold 135,000 pairs. Replicated-policy events
	// are one per pair whose state changed, two in the first round (Pending,
	// then NonCompliant), in place of EventsPerRound random ones.
	Rotate bool
}

// Validate checks the configuration.
func (c *GlobalHubConfig) Validate() error {
	var errs []error
	switch c.SendMode {
	case "", SendModeBatch, SendModeSingle, SendModeMixed:
	default:
		errs = append(errs, fmt.Errorf("send mode must be %s, %s or %s, got %q", SendModeBatch, SendModeSingle, SendModeMixed, c.SendMode))
	}
	if c.FrameBytes < 0 {
		errs = append(errs, fmt.Errorf("frame bytes must not be negative, got %d", c.FrameBytes))
	}
	if c.ChunkBytes < 0 {
		errs = append(errs, fmt.Errorf("chunk bytes must not be negative, got %d", c.ChunkBytes))
	}
	return errors.Join(errs...)
}

func (c GlobalHubConfig) withDefaults() GlobalHubConfig {
	c.ResyncEvery = count(c.ResyncEvery, DefaultResyncEvery)
	if c.FrameBytes == 0 {
		c.FrameBytes = DefaultFrameBytes
	}
	if c.ChunkBytes == 0 {
		c.ChunkBytes = DefaultChunkBytes
	}
	if c.SendMode == "" {
		c.SendMode = SendModeBatch
	}
	switch {
	case c.ClockSkew == 0:
		c.ClockSkew = DefaultClockSkew
	case c.ClockSkew < 0:
		c.ClockSkew = 0
	}
	return c
}

// single reports whether hub i (0-based) sends its events one by one.
func (c GlobalHubConfig) single(i int) bool {
	return c.SendMode == SendModeSingle || (c.SendMode == SendModeMixed && i%2 == 1)
}

// ghMessagesPerRound estimates MessagesPerRound for the global-hub agent,
// which sends what changed: a heartbeat; a managedcluster frame when a
// cluster changed, came or went; a policy.localspec frame when a spec
// changed; a complete compliance (some state changes every round) and a
// compliance when the placement changed; the event types' batches (one
// message per event in single mode); the ACS polls; and, every
// ResyncEvery rounds, the resync frames (chunks and copies left out).
func (c Config) ghMessagesPerRound() float64 {
	g := c.GlobalHub
	n := 1.0 // heartbeat
	if c.Clusters > 0 {
		n += 1 - math.Pow(1-c.ChangeProbability, float64(c.Clusters))*math.Pow(1-c.ChurnProbability, 2)
	}
	resyncFrames := 0.0
	if c.Clusters > 0 {
		resyncFrames += 2 + float64(c.Clusters)*ghClusterBytes/float64(g.FrameBytes)
	}
	if c.Policies > 0 {
		n += 1 - math.Pow(1-ghSpecChangeProbability, float64(c.Policies))
		n += c.PlacementProbability + c.RestartProbability + 1 // compliance, complete
		resyncFrames += 2 + float64(c.Policies)*ghPolicyBytes/float64(g.FrameBytes)
	}
	if g.ResyncEvery > 0 {
		n += resyncFrames / float64(g.ResyncEvery)
	}
	if c.EventsPerRound > 0 {
		events := float64(c.EventsPerRound) + ghClusterEventProbability + ghCGUEventProbability + ghRootPolicyEventProbability
		if g.SendMode == SendModeSingle {
			n += events
		} else {
			n += min(events, 4) // a batch per type with events
		}
	}
	return n + 2.0/3/ghAlertEvery + ghMigrationProbability
}

// The size of a simulated object's JSON, about.
const (
	ghClusterBytes = 520
	ghPolicyBytes  = 700
)
