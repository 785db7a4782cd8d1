package sim

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Defaults applied by Run to zero-valued Config fields.
const (
	// DefaultTopic is the topic messages are sent to.
	DefaultTopic = "status"
	// DefaultHubPrefix starts every hub name; hubs are numbered after it.
	DefaultHubPrefix = "hub-"
	// DefaultRestartProbability is the chance that a hub's agent restarts
	// before a round: rare enough that most rounds extend an incarnation,
	// frequent enough that a run of a few dozen rounds has restarts.
	DefaultRestartProbability = 0.05
	// DefaultChangeProbability is the chance that a managed cluster's
	// labels change in a round.
	DefaultChangeProbability = 0.25
	// DefaultChurnProbability is the chance per round that a hub removes
	// one of its managed clusters, and, separately, that it adds one.
	DefaultChurnProbability = 0.1
	// DefaultFirstIncarnation is the incarnation every agent starts with.
	DefaultFirstIncarnation = 1
	// DefaultPolicies is the number of policies per hub at the start.
	DefaultPolicies = 5
	// DefaultComplianceEvery is the number of rounds between a hub's
	// complete compliance reports when its placement does not change; the
	// rounds in between send deltas.
	DefaultComplianceEvery = 5
	// DefaultPlacementProbability is the chance per hub and round that its
	// placement changes by itself: a policy is added, removed or placed on
	// other clusters. Clusters coming and going change it too.
	DefaultPlacementProbability = 0.1
	// DefaultEventsPerRound is the number of policy events a hub reports
	// per round, in one policyevents bundle.
	DefaultEventsPerRound = 3
)

// Config configures a simulation. Probabilities are in [0, 1]; zero means
// the default and a negative value means never.
type Config struct {
	// Hubs is the number of hubs, at least 1.
	Hubs int
	// Clusters is the number of managed clusters per hub at the start; it
	// stays within about 10% of it as clusters come and go.
	Clusters int
	// Generations is the number of rounds, at least 1. In each, every hub
	// sends a heartbeat and a managedclusters snapshot, and, when it has
	// policies, the policy bundles that are due (see MessagesPerRound).
	Generations int
	// Topic the messages go to; "" means DefaultTopic, but for
	// AgentGlobalHub, whose hubs each send to a topic of their own,
	// GlobalHubTopicPrefix and the hub's name. A global-hub agent keys its
	// messages by event type, so on a shared topic (GlobalHubSharedTopic)
	// of several partitions a hub's types spread over them.
	Topic string
	// Seed makes the run reproducible: the same Config gives the same
	// messages (but for their times) and the same Expected.
	Seed int64
	// Rate is the number of messages per second over all hubs; 0 sends as
	// fast as the publisher takes them.
	Rate float64
	// Duration, when positive, ends the run early: after the round during
	// which it has passed since the start, even if fewer than Generations
	// rounds were sent. A live load whose publisher cannot keep up with
	// Rate then still ends on time, with a complete Expected.
	Duration time.Duration
	// RestartProbability is the chance per hub and round (after the first)
	// that the hub's agent restarts: its incarnation goes up by one and its
	// generation counter starts again. 0 means DefaultRestartProbability.
	RestartProbability float64
	// ChangeProbability is the chance per cluster and round that its labels
	// change. 0 means DefaultChangeProbability.
	ChangeProbability float64
	// ChurnProbability is the chance per hub and round that a cluster is
	// removed, and separately that one is added. 0 means
	// DefaultChurnProbability.
	ChurnProbability float64
	// HubPrefix starts every hub name; "" means DefaultHubPrefix.
	HubPrefix string
	// FirstIncarnation is the incarnation agents start with; 0 means
	// DefaultFirstIncarnation. Simulating again into a database that holds
	// an earlier run needs a higher one, or every bundle would be stale.
	FirstIncarnation uint64

	// Policies is the number of policies per hub at the start, each placed
	// on a random half of the hub's clusters; it stays within about 10% of
	// it as policies come and go. 0 means DefaultPolicies; a negative
	// value simulates no policies and sends none of the policy bundle
	// types (clusterspolicies, compliance, compliancedelta, policyevents).
	Policies int
	// ComplianceEvery is the number of rounds from one complete compliance
	// report to the next while the placement stays; a report also follows
	// every clusterspolicies bundle, and the rounds without one send a
	// compliancedelta. 1 sends a report every round and no deltas. 0 means
	// DefaultComplianceEvery; negative, reports only after placements.
	ComplianceEvery int
	// PlacementProbability is the chance per hub and round that its
	// placement changes by itself. 0 means DefaultPlacementProbability.
	PlacementProbability float64
	// EventsPerRound is the number of policy events per hub and round. 0
	// means DefaultEventsPerRound; negative, none.
	EventsPerRound int
	// Agent is the kind of agent the hubs run: AgentSTB ("" too) lists
	// every policy in a complete compliance report; AgentHoH does what the
	// hub-of-hubs leaf-hub agents do and leaves out every policy whose
	// clusters are all compliant, so an omitted policy means compliant.
	// AgentGlobalHub sends what the multicluster global-hub agent sends
	// (globalhub.go): other event types, versions and topics.
	Agent string
	// LoseProbability is the chance that a compliance report on which a
	// delta follows is lost: never published (compacted away, lost in
	// transit) while the agent goes on as if it had been, so that its
	// deltas name a base the bridge never reads. The bridge asks for a
	// resync (--resync-topic) and RunWithResync answers. For the
	// global-hub agent it is the chance that a managedcluster or
	// policy.localspec frame of updates and deletes is lost: only the
	// agent's next periodic resync repairs what it said. 0 loses none.
	LoseProbability float64
	// GlobalHub configures what only the global-hub agent does.
	GlobalHub GlobalHubConfig
	// FromRound, when above 1, sends nothing of the rounds before it: they
	// are simulated, and the agents go on as if they had been sent (to a
	// bridge that read them earlier). With the same Seed, a run of
	// Generations g then sends what a run of g rounds would have sent in
	// its rounds FromRound to g: a benchmark measures one round (a
	// compliance rotation) apart from the ones before. Expected is the
	// state after the last round, as ever.
	FromRound int
}

// The agent kinds of Config.Agent.
const (
	AgentSTB       = "stb"
	AgentHoH       = "hoh"
	AgentGlobalHub = "globalhub"
)

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.LoseProbability < 0 || c.LoseProbability > 1 {
		errs = append(errs, fmt.Errorf("lose probability must be in [0, 1], got %v", c.LoseProbability))
	}
	switch c.Agent {
	case "", AgentSTB, AgentHoH, AgentGlobalHub:
	default:
		errs = append(errs, fmt.Errorf("agent must be %s, %s or %s, got %q", AgentSTB, AgentHoH, AgentGlobalHub, c.Agent))
	}
	if err := c.GlobalHub.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("global-hub agent: %w", err))
	}
	if c.Hubs < 1 {
		errs = append(errs, fmt.Errorf("hubs must be at least 1, got %d", c.Hubs))
	}
	if c.Clusters < 0 {
		errs = append(errs, fmt.Errorf("clusters must not be negative, got %d", c.Clusters))
	}
	if c.Generations < 1 {
		errs = append(errs, fmt.Errorf("generations must be at least 1, got %d", c.Generations))
	}
	if c.Duration < 0 {
		errs = append(errs, fmt.Errorf("duration must not be negative, got %s", c.Duration))
	}
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
		errs = append(errs, fmt.Errorf("rate must be a finite number of messages per second, at least 0, got %v", c.Rate))
	}
	for _, p := range []struct {
		name string
		v    float64
	}{
		{"restart probability", c.RestartProbability},
		{"change probability", c.ChangeProbability},
		{"churn probability", c.ChurnProbability},
		{"placement probability", c.PlacementProbability},
	} {
		if p.v > 1 || math.IsNaN(p.v) {
			errs = append(errs, fmt.Errorf("%s must be at most 1, got %v", p.name, p.v))
		}
	}
	if c.FirstIncarnation == math.MaxUint64 {
		errs = append(errs, errors.New("first incarnation leaves no room for restarts"))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Topic == "" && c.Agent != AgentGlobalHub {
		c.Topic = DefaultTopic
	}
	if c.HubPrefix == "" {
		c.HubPrefix = DefaultHubPrefix
	}
	if c.FirstIncarnation == 0 {
		c.FirstIncarnation = DefaultFirstIncarnation
	}
	c.RestartProbability = probability(c.RestartProbability, DefaultRestartProbability)
	c.ChangeProbability = probability(c.ChangeProbability, DefaultChangeProbability)
	c.ChurnProbability = probability(c.ChurnProbability, DefaultChurnProbability)
	c.PlacementProbability = probability(c.PlacementProbability, DefaultPlacementProbability)
	c.Policies = count(c.Policies, DefaultPolicies)
	c.ComplianceEvery = count(c.ComplianceEvery, DefaultComplianceEvery)
	c.EventsPerRound = count(c.EventsPerRound, DefaultEventsPerRound)
	c.GlobalHub = c.GlobalHub.withDefaults()
	return c
}

// count applies the convention of Config for numbers: 0 means def,
// negative means none (0 once defaults are applied).
func count(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// MessagesPerRound estimates the number of messages one hub sends per
// round once past the first, for turning a message rate and a duration
// into a number of rounds (Generations): rate × duration / (Hubs ×
// MessagesPerRound). It is an average over the random changes of the
// configuration, not a bound.
//
// Every round sends a heartbeat and a managedclusters snapshot. With
// policies, a clusterspolicies bundle follows when the placement changed
// (by itself, by an agent restart, or because a placed cluster went or a
// new one was placed); then, while some policy is placed on some cluster,
// a compliance report or a delta and a policyevents bundle; without any
// placed pair, only the reports that are due. The global-hub agent's
// estimate is ghMessagesPerRound's.
func (c Config) MessagesPerRound() float64 {
	c = c.withDefaults()
	if c.Agent == AgentGlobalHub {
		return c.ghMessagesPerRound()
	}
	n := 2.0
	if c.Policies == 0 {
		return n
	}
	// A placed cluster going or a new cluster being placed: each happens
	// at the churn probability, and the cluster is placed with at least
	// one policy unless all of them leave it out.
	stay := (1 - c.PlacementProbability) * (1 - c.RestartProbability)
	if c.Clusters > 0 {
		placed := 1 - math.Pow(1-placeShare, float64(c.Policies))
		stay *= math.Pow(1-c.ChurnProbability*placed, 2)
	}
	placements := 1 - stay
	n += placements
	// The chance that no policy is placed on any cluster.
	none := math.Pow(1-placeShare, float64(c.Clusters*c.Policies))
	reports := placements
	if c.ComplianceEvery > 0 {
		reports += stay / float64(c.ComplianceEvery)
	}
	perRound := 1.0 // a compliance report or a delta
	if c.EventsPerRound > 0 {
		perRound++
	}
	return n + none*reports + (1-none)*perRound
}

// probability applies the convention of Config: 0 means def, negative
// means never.
func probability(p, def float64) float64 {
	switch {
	case p == 0:
		return def
	case p < 0:
		return 0
	}
	return p
}

// HubNames returns the names of the hubs a run with c simulates, in order.
func (c Config) HubNames() []string {
	c = c.withDefaults()
	names := make([]string, c.Hubs)
	for i := range names {
		names[i] = c.hubName(i)
	}
	return names
}

// hubName returns the name of hub i (0-based): the prefix and a number of
// at least three digits, padded to the width of the largest one so that
// names sort like numbers.
func (c Config) hubName(i int) string {
	width := max(3, len(strconv.Itoa(c.Hubs)))
	return fmt.Sprintf("%s%0*d", c.HubPrefix, width, i+1)
}
