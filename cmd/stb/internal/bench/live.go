package bench

import (
	"context"
	"fmt"
	"time"
)

// liveSample is the state of a live run at one moment.
type liveSample struct {
	At      time.Duration // since the producer started
	RSS     int64
	Sent    int64
	Read    float64
	Written float64
	Held    int64
}

// liveRun is a bridge variant reading while a producer process publishes
// at a fixed rate: the overload and steady scenarios. It samples the
// bridge once a second.
type liveRun struct {
	label   string
	bb      *benchBridge
	p       *producers
	rate    float64
	samples []liveSample
}

// startLive starts a bridge variant on a fresh topic, waits until it reads
// every partition, then starts the producers (one process unless asked
// for more): --hubs hubs publishing rate messages per second for about
// --duration.
func (e *benchEnv) startLive(ctx context.Context, label, dbName string, conflation bool, topic string, rate float64) (*liveRun, error) {
	return e.startLiveN(ctx, label, dbName, conflation, topic, rate, 1)
}

// startLiveN is startLive with n producer processes.
func (e *benchEnv) startLiveN(ctx context.Context, label, dbName string, conflation bool, topic string, rate float64, n int) (*liveRun, error) {
	return e.startLiveSpec(ctx, label, dbName, conflation, topic, rate, n, produceSpec{})
}

// startLiveSpec is startLiveN whose producers also do what opts asks
// (its Brokers and Sim are set here).
func (e *benchEnv) startLiveSpec(ctx context.Context, label, dbName string, conflation bool, topic string, rate float64, n int, opts produceSpec) (*liveRun, error) {
	bb, err := e.startBridge(ctx, variantOpts{label: label, conflation: conflation, topics: []string{topic}, db: dbName})
	if err != nil {
		return nil, err
	}
	if err := bb.waitAssigned(ctx, e.cfg.Partitions); err != nil {
		_ = bb.stop()
		return nil, err
	}
	cfg := e.simConfig(topic, rate*e.cfg.Duration.Seconds())
	// A producer that cannot keep up with the rate on this machine still
	// stops at the end of the window, after a complete round, so that the
	// run can be verified.
	cfg.Rate, cfg.Duration = rate, e.cfg.Duration
	opts.Brokers, opts.Sim = e.brokers, cfg
	p, err := startProducers(e.produceCmd, opts, n)
	if err != nil {
		_ = bb.stop()
		return nil, err
	}
	return &liveRun{label: label, bb: bb, p: p, rate: rate}, nil
}

// until samples the run once a second until at has passed since the
// producer started.
func (l *liveRun) until(ctx context.Context, e *benchEnv, at time.Duration) error {
	for {
		el := time.Since(l.p.started)
		if el >= at {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Second-el%time.Second, at-el)):
		}
		if err := l.bb.failed(); err != nil {
			return err
		}
		l.sample()
		s := l.samples[len(l.samples)-1]
		e.out.progress("%s [%5.1fs] sent %s (%s/s, asked %.0f/s) | read %s | written %s (%s/s) | held %s | rss %s",
			l.label, s.At.Seconds(), thousands(s.Sent), perSecond(float64(s.Sent), s.At), l.rate,
			thousands(int64(s.Read)), thousands(int64(s.Written)), perSecond(s.Written, s.At),
			mib(float64(s.Held)), mib(float64(s.RSS)))
	}
}

// sample records the state now.
func (l *liveRun) sample() liveSample {
	c := l.bb.counters()
	s := liveSample{At: time.Since(l.p.started), RSS: selfRSS(), Sent: l.p.Sent(), Read: c.read, Written: c.written, Held: c.held}
	l.samples = append(l.samples, s)
	return s
}

// rssBetween returns the RSS samples taken in [from, to), with At counted
// from from.
func (l *liveRun) rssBetween(from, to time.Duration) []rssSample {
	var out []rssSample
	for _, s := range l.samples {
		if s.At >= from && s.At < to {
			out = append(out, rssSample{At: s.At - from, RSS: s.RSS})
		}
	}
	return out
}

// stop ends the producer, if it still runs, and the bridge.
func (l *liveRun) stop() error {
	l.p.stop()
	return l.bb.stop()
}

// sentRate returns the rate the producer kept between its first sample
// and the last one taken by at (its start-up left out).
func (l *liveRun) sentRate(at time.Duration) float64 {
	var first, last *liveSample
	for i := range l.samples {
		if s := &l.samples[i]; s.At <= at {
			if first == nil {
				first = s
			}
			last = s
		}
	}
	if first == nil || last.At <= first.At {
		return 0
	}
	return float64(last.Sent-first.Sent) / (last.At - first.At).Seconds()
}

// describe says how the producer kept up with its rate.
func (l *liveRun) describe(at time.Duration) string {
	got := l.sentRate(at)
	if got < 0.9*l.rate {
		return fmt.Sprintf("the producer reached only %.0f of %.0f messages/s", got, l.rate)
	}
	return ""
}
