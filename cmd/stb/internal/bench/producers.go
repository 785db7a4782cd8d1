package bench

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/stbridge/stb/pkg/sim"
)

// producers is a live load published by several producer processes, each
// simulating its own hubs (its own hub name prefix and seed) at its share
// of the rate: one process cannot publish ten times what the database
// absorbs on this machine. With one process it is that process.
type producers struct {
	ps      []*benchProducer
	started time.Time
	exited  chan struct{}
}

// startProducers starts n processes of the command line argv (see
// produceCommand) that publish spec.Sim between them (splitSim), each
// doing what the rest of spec asks.
func startProducers(argv []string, spec produceSpec, n int) (*producers, error) {
	g := &producers{exited: make(chan struct{})}
	for _, part := range splitSim(spec.Sim, n) {
		ps := spec
		ps.Sim = part
		p, err := startProducer(argv, ps)
		if err != nil {
			g.stop()
			return nil, err
		}
		g.ps = append(g.ps, p)
	}
	g.started = g.ps[0].started
	if spec.Ahead {
		// The run starts when they all send: building the messages
		// took them a while, and sending none.
		for _, p := range g.ps {
			select {
			case <-p.ready:
				if p.readyAt.After(g.started) {
					g.started = p.readyAt
				}
			case <-p.exited:
				g.stop()
				return nil, fmt.Errorf("producer exited before it was ready: %v: %s", p.waitErr, p.stderr.String())
			}
		}
	}
	go func() {
		for _, p := range g.ps {
			<-p.done()
		}
		close(g.exited)
	}()
	return g, nil
}

// splitSim splits a simulation over n producers (at most one per hub):
// its hubs in all, at its rate in all, each part with hubs of its own (a
// hub name prefix and a seed of its own). One part is the simulation
// itself.
func splitSim(cfg sim.Config, n int) []sim.Config {
	n = max(1, min(n, cfg.Hubs))
	if n == 1 {
		return []sim.Config{cfg}
	}
	parts := make([]sim.Config, n)
	for i := range parts {
		part := cfg
		part.Hubs = cfg.Hubs/n + btoi(i < cfg.Hubs%n)
		part.Rate = cfg.Rate / float64(n)
		part.Seed = cfg.Seed + int64(i)
		part.HubPrefix = fmt.Sprintf("hub-p%d-", i)
		parts[i] = part
	}
	return parts
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Sent returns the messages published so far by all.
func (g *producers) Sent() int64 {
	var n int64
	for _, p := range g.ps {
		n += p.Sent()
	}
	return n
}

// cpu returns the CPU time of all so far.
func (g *producers) cpu() time.Duration {
	var d time.Duration
	for _, p := range g.ps {
		d += p.cpu()
	}
	return d
}

// done is closed once every process has exited.
func (g *producers) done() <-chan struct{} { return g.exited }

// stop ends every process.
func (g *producers) stop() {
	for _, p := range g.ps {
		p.stop()
	}
}

// wait waits for every process and returns their expected states as one:
// their hubs are disjoint.
func (g *producers) wait(ctx context.Context) (*sim.Expected, error) {
	var all *sim.Expected
	for _, p := range g.ps {
		exp, err := p.wait(ctx)
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = exp
			continue
		}
		all.Messages += exp.Messages
		all.Restarts += exp.Restarts
		for t, n := range exp.MessagesByType {
			all.MessagesByType[t] += n
		}
		maps.Copy(all.Hubs, exp.Hubs)
	}
	return all, nil
}
