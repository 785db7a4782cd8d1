package sim

import (
	"context"
	"testing"
)

// recorder is a Publisher that keeps every message.
type recorder struct {
	msgs    []Message
	flushes int
}

func (r *recorder) Publish(_ context.Context, m Message) error {
	r.msgs = append(r.msgs, m)
	return nil
}

func (r *recorder) Flush(context.Context) error {
	r.flushes++
	return nil
}

// run runs a simulation into a recorder and fails the test on an error.
func run(t testing.TB, cfg Config) (*Expected, *recorder) {
	t.Helper()
	rec := &recorder{}
	exp, err := Run(context.Background(), cfg, rec, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return exp, rec
}

// ofType returns the messages of type typ, in order.
func ofType(msgs []Message, typ string) []Message {
	var out []Message
	for _, m := range msgs {
		if m.Type == typ {
			out = append(out, m)
		}
	}
	return out
}
