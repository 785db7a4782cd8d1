package sim

import (
	"errors"
	"fmt"
	"math"
	"strconv"
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
)

// Config configures a simulation. Probabilities are in [0, 1]; zero means
// the default and a negative value means never.
type Config struct {
	// Hubs is the number of hubs, at least 1.
	Hubs int
	// Clusters is the number of managed clusters per hub at the start; it
	// stays within about 10% of it as clusters come and go.
	Clusters int
	// Generations is the number of rounds, at least 1; in each, every hub
	// sends one bundle of each simulated type.
	Generations int
	// Topic the messages go to; "" means DefaultTopic.
	Topic string
	// Seed makes the run reproducible: the same Config gives the same
	// messages (but for their times) and the same Expected.
	Seed int64
	// Rate is the number of messages per second over all hubs; 0 sends as
	// fast as the publisher takes them.
	Rate float64
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
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.Hubs < 1 {
		errs = append(errs, fmt.Errorf("hubs must be at least 1, got %d", c.Hubs))
	}
	if c.Clusters < 0 {
		errs = append(errs, fmt.Errorf("clusters must not be negative, got %d", c.Clusters))
	}
	if c.Generations < 1 {
		errs = append(errs, fmt.Errorf("generations must be at least 1, got %d", c.Generations))
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
	if c.Topic == "" {
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
	return c
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

// hubName returns the name of hub i (0-based): the prefix and a number of
// at least three digits, padded to the width of the largest one so that
// names sort like numbers.
func (c Config) hubName(i int) string {
	width := max(3, len(strconv.Itoa(c.Hubs)))
	return fmt.Sprintf("%s%0*d", c.HubPrefix, width, i+1)
}
