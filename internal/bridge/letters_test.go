package bridge

import (
	"testing"

	"github.com/stbridge/stb/dbsyncers/cne"
	"github.com/stbridge/stb/dbsyncers/work"
	"github.com/stbridge/stb/internal/profiles"
	"github.com/stbridge/stb/pkg/transport"
)

// The families whose bundles keep their event's attributes beside the
// data, in Attrs (work, cne: the Mappers; the global hub's data is all its
// bundles carry), rebuild their events for the workers' dead letters, so that a letter is replayable
// from its stored copy (internal/replay
// TestWriteTimeLettersReplayFromTheStoredCopy); the dispatcher gets them
// all.
func TestEveryFamilyRebuildsItsEventsForTheDeadLetters(t *testing.T) {
	set, err := profiles.Parse(profiles.Names())
	if err != nil {
		t.Fatal(err)
	}
	var families []transport.Family
	for _, f := range set.Families() {
		if _, ok := f.(transport.Mapper); ok {
			families = append(families, f)
		}
	}
	events := eventLetters(set.Families())
	if len(events) != len(families) || len(events) != 2 {
		t.Fatalf("%d of the %d families rebuild their events, want work's and cne's", len(events), len(families))
	}
	for _, e := range events {
		switch e.(type) {
		case work.Family, cne.Family:
		default:
			t.Errorf("unexpected family %T", e)
		}
	}
}
