package transport

import (
	"regexp"
	"strings"
)

// TopicLabels maps a topic read to the value of the `topic` label of the
// metrics (stb_transport_messages_total, stb_kafka_*, stb_committer_*): the
// entry of Config.Topics that subscribed to it. A topic named in Topics is
// its own label; a topic matched by a pattern is labelled with the pattern.
//
// A label per topic read would be a label per hub for the global-hub
// agents, which publish to a topic per hub (gh-status.<hub>) read by one
// pattern: thousands of series that come with every hub and never go.
// Labelled by the subscription entry, the series are bounded by the
// configuration, as docs/conventions.md (Metrics) wants.
type TopicLabels struct {
	names    map[string]struct{}
	patterns []*regexp.Regexp
}

// NewTopicLabels returns the labels of the subscription topics (the form of
// Config.Topics: an entry starting with '^' is a regular expression). A
// pattern Go cannot compile (Config.Validate rejects it) matches nothing.
func NewTopicLabels(topics []string) *TopicLabels {
	l := &TopicLabels{names: map[string]struct{}{}}
	for _, t := range topics {
		if !strings.HasPrefix(t, "^") {
			l.names[t] = struct{}{}
			continue
		}
		if re, err := regexp.Compile(t); err == nil {
			l.patterns = append(l.patterns, re)
		}
	}
	return l
}

// Label returns the label of a topic read: the topic when the subscription
// names it, else the first pattern matching it (a label other than the
// topic is always a pattern: a topic name cannot start with '^'). librdkafka's regular
// expressions are not Go's; a topic that librdkafka matched and no Go
// pattern does is labelled with the first pattern, never with itself, so
// that the label stays bounded. Without patterns every topic is its own.
func (l *TopicLabels) Label(topic string) string {
	if _, ok := l.names[topic]; ok || len(l.patterns) == 0 {
		return topic
	}
	for _, re := range l.patterns {
		if re.MatchString(topic) {
			return re.String()
		}
	}
	return l.patterns[0].String()
}

// TopicLabels returns the metric labels of c's subscription.
func (c Config) TopicLabels() *TopicLabels { return NewTopicLabels(c.Topics) }
