package transport_test

import (
	"testing"

	"github.com/stbridge/stb/pkg/transport"
)

func TestTopicLabels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		topics []string
		topic  string
		want   string
	}{
		{"named", []string{"status"}, "status", "status"},
		{"pattern", []string{"status", `^gh-status\..*`}, "gh-status.hub-7", `^gh-status\..*`},
		{"named before a pattern that matches it too", []string{`^gh-status.*`, "gh-status"}, "gh-status", "gh-status"},
		{"first matching pattern", []string{`^a\..*`, `^.*`}, "b.x", `^.*`},
		{"no pattern matches in Go: still a pattern, never the topic", []string{`^gh-status\..*`}, "other", `^gh-status\..*`},
		{"without patterns every topic is its own", []string{"status"}, "other", "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := transport.NewTopicLabels(tc.topics).Label(tc.topic); got != tc.want {
				t.Errorf("Label(%q) with %q = %q, want %q", tc.topic, tc.topics, got, tc.want)
			}
		})
	}
}
