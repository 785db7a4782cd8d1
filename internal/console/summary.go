package console

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/stbridge/stb/pkg/committer"
)

// Level is how a figure of the overview stands against its threshold:
// the class its element gets, so that the page shows what is wrong by
// colour and the refresh changes the colour with the figure.
type Level string

// The levels. LevelInfo is a figure that is neither good nor bad (how
// many hubs there are).
const (
	LevelOK   Level = "ok"
	LevelWarn Level = "warn"
	LevelBad  Level = "bad"
	LevelInfo Level = "info"
)

// Threshold grades a figure: at or above Bad it is bad, else at or above
// Warn a warning, else ok. A zero Warn or Bad is not used.
type Threshold struct {
	Warn, Bad float64
	// Unit follows the numbers in the rule shown ("s", " messages").
	Unit string
}

// Level grades v.
func (t Threshold) Level(v float64) Level {
	switch {
	case t.Bad > 0 && v >= t.Bad:
		return LevelBad
	case t.Warn > 0 && v >= t.Warn:
		return LevelWarn
	}
	return LevelOK
}

// Rule says the threshold in words, for the page's tooltips.
func (t Threshold) Rule() string {
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + t.Unit }
	switch {
	case t.Warn > 0 && t.Bad > 0:
		return "warn at " + num(t.Warn) + ", bad at " + num(t.Bad)
	case t.Bad > 0:
		return "bad at " + num(t.Bad)
	case t.Warn > 0:
		return "warn at " + num(t.Warn)
	}
	return ""
}

// Thresholds are what the overview grades its figures by.
type Thresholds struct {
	// DeadLetters: letters stored in the last hour. Each is a bundle that
	// was not written, so one is bad.
	DeadLetters Threshold
	// Retrying: hubs whose writes failed and are retried.
	Retrying Threshold
	// Waiting: hubs whose held work waits for a bundle it depends on.
	Waiting Threshold
	// OldestUnwritten: seconds the oldest unwritten bundle has waited.
	OldestUnwritten Threshold
	// Inactive: hubs that stopped sending heartbeats.
	Inactive Threshold
	// TopicLag: messages of a topic not yet committed (the sum over its
	// partitions); PartitionLag the same for one partition.
	TopicLag, PartitionLag Threshold
	// CountsAge: seconds since the pass over the units the counts come
	// from; a pass that stalls leaves the page showing old figures.
	CountsAge Threshold
}

// DefaultThresholds are the console's thresholds.
var DefaultThresholds = Thresholds{
	DeadLetters:     Threshold{Bad: 1},
	Retrying:        Threshold{Warn: 1, Bad: 10},
	Waiting:         Threshold{Warn: 1, Bad: 100},
	OldestUnwritten: Threshold{Warn: problemAge.Seconds(), Bad: 300, Unit: "s"},
	Inactive:        Threshold{Warn: 1},
	TopicLag:        Threshold{Warn: 10_000, Bad: 100_000, Unit: " messages"},
	PartitionLag:    Threshold{Warn: 10_000, Bad: 100_000, Unit: " messages"},
	CountsAge:       Threshold{Warn: 10, Bad: 60, Unit: "s"},
}

// Signal is one figure of the overview: its element's id, what it counts,
// the value shown, its level and the rule that graded it. The page and
// its refresh set each element's text, class and tooltip from these.
type Signal struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Value string `json:"value"`
	Level Level  `json:"level"`
	Rule  string `json:"rule,omitempty"`
}

// signals grades the overview's figures by th, in the order the page
// shows them.
func signals(o Overview, th Thresholds) []Signal {
	graded := func(id, label string, v float64, value string, t Threshold) Signal {
		return Signal{ID: id, Label: label, Value: value, Level: t.Level(v), Rule: t.Rule()}
	}
	info := func(id, label string, v int64) Signal {
		return Signal{ID: id, Label: label, Value: strconv.FormatInt(v, 10), Level: LevelInfo}
	}
	count := func(v int) string { return strconv.Itoa(v) }
	out := []Signal{
		info("c-active", "active hubs", o.ActiveHubs),
		graded("c-inactive", "inactive", float64(o.InactiveHubs), strconv.FormatInt(o.InactiveHubs, 10), th.Inactive),
		info("c-deleted", "deleted", o.DeletedHubs),
		info("c-hubs", "units in memory", int64(o.Hubs)),
		info("c-dormant", "idle, evicted", int64(o.DormantHubs)),
		info("c-held", "holding unwritten", int64(o.Held)),
		graded("c-retrying", "retrying", float64(o.Retrying), count(o.Retrying), th.Retrying),
		graded("c-waiting", "waiting on a dependency", float64(o.WaitingDependency), count(o.WaitingDependency), th.Waiting),
	}
	if o.DeadLettersLastHour < 0 {
		out = append(out, Signal{ID: "c-dead", Label: "dead letters, last hour", Value: "–", Level: LevelWarn,
			Rule: "the database did not answer"})
	} else {
		out = append(out, graded("c-dead", "dead letters, last hour", float64(o.DeadLettersLastHour),
			strconv.FormatInt(o.DeadLettersLastHour, 10), th.DeadLetters))
	}
	out = append(out,
		graded("c-oldest", "oldest unwritten", o.OldestUnwrittenSec, secs(o.OldestUnwrittenSec), th.OldestUnwritten))
	lag := Signal{ID: "c-lag", Label: "committed lag", Value: "–", Level: LevelInfo, Rule: th.TopicLag.Rule() + " (per topic)"}
	// The total over the topics whose lag is known; "–" and not graded
	// when none is.
	var total int64
	known := false
	for _, t := range o.Topics {
		if t.Known > 0 {
			known = true
			total += t.Lag
			lag.Level = worseLevel(lag.Level, t.Level)
		}
	}
	if known {
		lag.Value = strconv.FormatInt(total, 10)
	}
	out = append(out, lag,
		graded("c-asof", "counted ago", o.AsOfSec, secs(o.AsOfSec), th.CountsAge))
	return out
}

// worseLevel returns the worse of a and b.
func worseLevel(a, b Level) Level {
	rank := func(l Level) int {
		switch l {
		case LevelBad:
			return 3
		case LevelWarn:
			return 2
		case LevelOK:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

func secs(s float64) string { return strconv.FormatFloat(s, 'f', 1, 64) + "s" }

// TopicLag sums up the assigned partitions of one topic: how many, how
// many of them know their lag, the total lag of those that do and the
// partition that lags most.
type TopicLag struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	// Known is the number of partitions whose lag is known (the reader
	// learned their high watermark); Lag their total.
	Known int   `json:"known"`
	Lag   int64 `json:"lag"`
	// Worst is the partition that lags most, WorstLag its lag; -1 when no
	// partition knows its lag.
	Worst    int32 `json:"worstPartition"`
	WorstLag int64 `json:"worstLag"`
	// Outstanding is the messages read and not yet done with.
	Outstanding int   `json:"outstanding"`
	Level       Level `json:"level"`
}

// summarizeLag returns a TopicLag per topic of parts, by topic, graded by
// th: a topic is as bad as its total or its worst partition.
func summarizeLag(parts []committer.PartitionStats, th Thresholds) []TopicLag {
	by := map[string]*TopicLag{}
	var out []*TopicLag
	for _, p := range parts {
		t, ok := by[p.Topic]
		if !ok {
			t = &TopicLag{Topic: p.Topic, Worst: -1, WorstLag: -1}
			by[p.Topic] = t
			out = append(out, t)
		}
		t.Partitions++
		t.Outstanding += p.Outstanding
		if p.Lag < 0 {
			continue
		}
		t.Known++
		t.Lag += p.Lag
		if p.Lag > t.WorstLag || p.Lag == t.WorstLag && p.Partition < t.Worst {
			t.Worst, t.WorstLag = p.Partition, p.Lag
		}
	}
	slices.SortFunc(out, func(a, b *TopicLag) int { return cmp.Compare(a.Topic, b.Topic) })
	res := make([]TopicLag, len(out))
	for i, t := range out {
		t.Level = LevelInfo
		if t.Known > 0 {
			t.Level = worseLevel(th.TopicLag.Level(float64(t.Lag)), th.PartitionLag.Level(float64(t.WorstLag)))
		}
		res[i] = *t
	}
	return res
}

// topicRows caps the topics the overview lists.
const topicRows = 20

// worstTopics returns the n worst of ts (by level, then lag), by topic.
func worstTopics(ts []TopicLag, n int) []TopicLag {
	if len(ts) <= n {
		return ts
	}
	rank := map[Level]int{LevelBad: 0, LevelWarn: 1, LevelOK: 2, LevelInfo: 3}
	worst := slices.Clone(ts)
	slices.SortFunc(worst, func(a, b TopicLag) int {
		return cmp.Or(cmp.Compare(rank[a.Level], rank[b.Level]), cmp.Compare(b.Lag, a.Lag), cmp.Compare(a.Topic, b.Topic))
	})
	worst = worst[:n]
	slices.SortFunc(worst, func(a, b TopicLag) int { return cmp.Compare(a.Topic, b.Topic) })
	return worst
}

// orDash shows v, or "–" when it is negative (not known).
func orDash(v int64) string {
	if v < 0 {
		return "–"
	}
	return strconv.FormatInt(v, 10)
}

// Wait is what a hub's type waits for: a version of the type it depends on.
type Wait struct {
	Type      string `json:"type"`
	DependsOn string `json:"dependsOn"`
	Needs     string `json:"needs"`
	Has       string `json:"has,omitempty"`
}

// String says the wait in words: "compliance needs clusterspolicies ≥ 1.4
// (written: 1.3)".
func (w Wait) String() string {
	has := w.Has
	if has == "" {
		has = "none"
	}
	return fmt.Sprintf("%s needs %s %s (written: %s)", w.Type, w.DependsOn, w.Needs, has)
}
