package conflation

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
)

// TestMergeDecodesRawDeltas: deltas come from the reader raw; a unit whose
// waiting deltas pass MaxDeltaBytes decodes them to merge them, each once
// however often it merges, and folds every run of deltas that decode into
// one bundle. A delta that does not decode is not merged away: it stays
// between the runs, in its place, for the worker to dead-letter, and the
// committer stays behind every merged message.
func TestMergeDecodesRawDeltas(t *testing.T) {
	types := []bundle.TypeInfo{
		{Name: "compliance", Kind: bundle.Complete},
		{Name: "compliancedelta", Kind: bundle.Delta, DependsOn: "compliance", Rule: bundle.Exactly},
	}
	decodes := map[string]int{}
	decode := func(b *bundle.Bundle) (any, error) {
		data := string(b.Raw)
		decodes[data]++
		if data == "bad" {
			return nil, errors.New("not a delta")
		}
		if b.Attrs != "attrs of "+data {
			return nil, fmt.Errorf("delta %s has attributes %v, not its own", data, b.Attrs)
		}
		return []string{data}, nil
	}
	merge := func(older, newer any) any { return append(older.([]string), newer.([]string)...) }
	m, err := NewManager(Config{Types: types, MaxDeltaBytes: 15, Decode: decode,
		Merge: map[string]MergeFunc{"compliancedelta": merge}})
	if err != nil {
		t.Fatal(err)
	}
	done := &doneSet{}
	base := v(1, 1)
	off := int64(0)
	insert := func(typ string, ver bundle.Version, data string) {
		off++
		b := &bundle.Bundle{Hub: "h", Type: typ, Version: ver, Raw: []byte(data), Attrs: "attrs of " + data, Size: 10,
			Origin: bundle.Origin{Topic: "t", Offset: off}}
		if typ == "compliancedelta" {
			b.Dependency, b.HasDependency = base, true
		}
		b.Track(done)
		m.Insert(b)
	}
	insert("compliance", base, "base")
	u, _ := m.Lookup("h")
	j, err := u.Next()
	if err != nil {
		t.Fatal(err)
	}
	m.Report(j, Applied)
	if len(decodes) != 0 {
		t.Fatalf("decoded %v: only a merge decodes in a unit", decodes)
	}
	for g, data := range []string{"d2", "d3", "bad", "d5", "d6"} {
		insert("compliancedelta", v(1, uint64(g+2)), data)
	}
	if held := m.held.Load(); held != 5*10 {
		t.Errorf("%d bytes held, want the 50 of the raw deltas, merged or not", held)
	}
	j, err = u.Next()
	if err != nil {
		t.Fatal(err)
	}
	var payloads [][]string
	for _, b := range j.Bundles {
		p, _ := b.Payload.([]string)
		payloads = append(payloads, p)
	}
	if want := []bundle.Version{v(1, 3), v(1, 4), v(1, 6)}; !slices.Equal(versions(j), want) {
		t.Errorf("job versions %v, want %v: d2+d3, bad, d5+d6", versions(j), want)
	}
	if len(payloads) != 3 || !slices.Equal(payloads[0], []string{"d2", "d3"}) || payloads[1] != nil || !slices.Equal(payloads[2], []string{"d5", "d6"}) {
		t.Errorf("job payloads %q, want [d2 d3], none, [d5 d6]", payloads)
	}
	if j.Bundles[1].Decode(nil) == nil || string(j.Bundles[1].Raw) != "bad" || j.Bundles[1].Attrs != "attrs of bad" {
		t.Errorf("the bad delta is not left with its data, its attributes and its decode error")
	}
	if j.Bundles[0].Raw != nil || j.Bundles[0].Attrs != nil {
		t.Errorf("a merged delta keeps the raw data %q or the attributes %v of its first", j.Bundles[0].Raw, j.Bundles[0].Attrs)
	}
	for data, n := range decodes {
		if n != 1 {
			t.Errorf("%s decoded %d times, want once", data, n)
		}
	}
	// The merged bundles hold the oldest message of their run (offsets 2
	// and 5) until they are written; the messages merged into them are
	// released (3 and 6); the bad one is held as itself (4).
	for off, want := range map[int64]int{2: 0, 3: 1, 4: 0, 5: 0, 6: 1} {
		if got := done.count(off); got != want {
			t.Errorf("offset %d released %d times before the write, want %d", off, got, want)
		}
	}
	m.Report(j, Applied)
	for off := int64(1); off <= 6; off++ {
		if got := done.count(off); got != 1 {
			t.Errorf("offset %d released %d times after the write, want 1", off, got)
		}
	}
}
