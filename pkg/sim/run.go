package sim

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stbridge/stb/pkg/bundle"
)

// Run simulates cfg.Hubs hubs for cfg.Generations rounds (fewer when
// cfg.Duration ends it first; Expected.Generations says how many), sending every
// message to pub, and returns the state the database must hold once the
// bridge has written them all.
//
// In each round the hubs take turns, each sending its bundles of the round
// (a heartbeat, a managedclusters snapshot, then the policy bundles that
// are due) before the next hub's, so consecutive messages go to different
// hubs and partitions. Messages are
// stamped with the time they are sent and paced to cfg.Rate. progress, if
// not nil, is called after every message with the number sent so far; it
// runs on Run's goroutine and should return quickly.
//
// When pub implements Flusher, Run flushes it before returning. On an error,
// from pub or from ctx, Run returns it and no Expected: what was delivered
// is then unknown.
func Run(ctx context.Context, cfg Config, pub Publisher, progress func(sent int)) (*Expected, error) {
	return RunWithResync(ctx, cfg, pub, progress, nil, 0)
}

// ResyncAsk is a resync request as an agent reads it: send a complete
// bundle of Type again.
type ResyncAsk struct {
	Hub, Type string
}

// RunWithResync is Run, then answers resync requests from asks as the
// agents do, until none came for quiet: each is answered with a complete
// bundle of the type asked for, the hub's state as it is, at a new
// generation. Requests for a hub or type the run cannot send are ignored.
// With asks nil it is Run.
func RunWithResync(ctx context.Context, cfg Config, pub Publisher, progress func(sent int), asks <-chan ResyncAsk, quiet time.Duration) (*Expected, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("simulation config: %w", err)
	}
	cfg = cfg.withDefaults()
	hubs := make([]*hub, cfg.Hubs)
	for i := range hubs {
		hubs[i] = newHub(cfg, i)
	}
	exp := &Expected{
		Seed:             cfg.Seed,
		Topic:            cfg.Topic,
		Generations:      cfg.Generations,
		MessagesByType:   make(map[string]int),
		FirstIncarnation: cfg.FirstIncarnation,
		Hubs:             make(map[string]*HubState, len(hubs)),
	}
	lim := newLimiter(cfg.Rate, time.Now)
	start := time.Now()
	ghPub, _ := pub.(GHPublisher)
	send := func(m GHMessage) error {
		if m.Time.IsZero() {
			m.Time = time.Now() // the global-hub agent stamps its own
		}
		var err error
		switch {
		case ghPub != nil && strings.HasPrefix(m.Type, bundle.GlobalHubPrefix):
			err = ghPub.PublishGH(ctx, m)
		case m.needsGH():
			err = fmt.Errorf("%T cannot send what a global-hub agent's message carries (no PublishGH)", pub)
		default:
			err = pub.Publish(ctx, m.Message)
		}
		if err != nil {
			return fmt.Errorf("publish %s %s of hub %s: %w", m.Type, m.Version, m.Hub, err)
		}
		exp.Messages++
		exp.MessagesByType[m.Type]++
		if progress != nil {
			progress(exp.Messages)
		}
		return nil
	}

	for round := 1; round <= cfg.Generations; round++ {
		if cfg.Duration > 0 && round > 1 && time.Since(start) >= cfg.Duration {
			exp.Generations = round - 1
			break
		}
		for _, h := range hubs {
			msgs, err := h.step(round)
			if err != nil {
				return nil, fmt.Errorf("hub %s, round %d: %w", h.name, round, err)
			}
			if round < cfg.FromRound {
				continue // sent in an earlier run
			}
			for _, m := range msgs {
				if err := lim.wait(ctx); err != nil {
					return nil, err
				}
				if err := send(m); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, h := range hubs { // reports held back to be maybe lost; repairing resyncs
		msgs, err := h.flush()
		if err != nil {
			return nil, fmt.Errorf("hub %s, after the last round: %w", h.name, err)
		}
		for _, m := range msgs {
			if err := send(m); err != nil {
				return nil, err
			}
		}
	}
	flush := func() error {
		if f, ok := pub.(Flusher); ok {
			if err := f.Flush(ctx); err != nil {
				return fmt.Errorf("flush publisher: %w", err)
			}
		}
		return nil
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if asks != nil {
		plainSend := func(m Message) error { return send(GHMessage{Message: m}) }
		if err := answerResyncs(ctx, hubs, asks, quiet, plainSend, flush); err != nil {
			return nil, err
		}
	}

	for _, h := range hubs {
		st := h.state()
		exp.Hubs[h.name] = st
		exp.Restarts += st.Restarts
		exp.Lost += h.lost
		exp.Resyncs += h.resyncs
		if h.gh != nil {
			if exp.GlobalHub == nil {
				exp.GlobalHub = &GHStats{}
			}
			exp.GlobalHub.add(h.gh.counts())
		}
	}
	return exp, nil
}

// answerResyncs answers requests until none came for quiet.
func answerResyncs(ctx context.Context, hubs []*hub, asks <-chan ResyncAsk, quiet time.Duration,
	send func(Message) error, flush func() error) error {
	byName := make(map[string]*hub, len(hubs))
	for _, h := range hubs {
		byName[h.name] = h
	}
	timer := time.NewTimer(quiet)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		case a, ok := <-asks:
			if !ok {
				return nil
			}
			timer.Reset(quiet)
			h := byName[a.Hub]
			if h == nil {
				continue
			}
			m, ok, err := h.resync(a.Type)
			if err != nil {
				return fmt.Errorf("resync %s of hub %s: %w", a.Type, a.Hub, err)
			}
			if !ok {
				continue
			}
			if err := send(m); err != nil {
				return err
			}
			if err := flush(); err != nil {
				return err
			}
		}
	}
}
