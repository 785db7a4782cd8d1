package console

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stbridge/stb/conflation"
	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
)

// consoleOf is a console over only a conflation manager of n hubs, each
// holding an unwritten heartbeat that has waited a minute: every hub is a
// problem, the console's worst case.
func consoleOf(tb testing.TB, n int) *Console {
	tb.Helper()
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC).UnixNano())
	m, err := conflation.NewManager(conflation.Config{
		Types: dbsyncers.Default().Types(), Registerer: prometheus.NewRegistry(),
		Now: func() time.Time { return time.Unix(0, now.Load()) },
	})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		m.Insert(&bundle.Bundle{Hub: fmt.Sprintf("hub-%06d", i), Type: "heartbeat", Version: bundle.Version{Incarnation: 1, Generation: uint64(i%7 + 1)}, Size: 2})
	}
	now.Add(int64(time.Minute) + int64(time.Duration(n)))
	return New(Deps{Units: m})
}

// The console's pages that grow with the hubs stay bounded: the problems
// list and a search are capped, /debug/units is a page.
func TestConsoleBoundedAtManyHubs(t *testing.T) {
	b := consoleOf(t, 5000)
	o := b.unitOverview()
	if o.Hubs != 5000 || o.Held != 5000 || len(o.Problems) != consoleRows {
		t.Fatalf("overview: %d hubs, %d held, %d problems", o.Hubs, o.Held, len(o.Problems))
	}
	names, more, err := b.searchHubs(t.Context(), "hub-00")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != consoleRows || !more || names[0] != "hub-000000" {
		t.Fatalf("search: %d names (more %v), first %q", len(names), more, names[0])
	}
	rec := httptest.NewRecorder()
	b.unitsPage(rec, httptest.NewRequest(http.MethodGet, "/debug/units?after=hub-004989&limit=100", nil))
	if rec.Header().Get("X-Total-Count") != "5000" || bytes.Count(rec.Body.Bytes(), []byte(`"hub":`)) != 10 ||
		!bytes.Contains(rec.Body.Bytes(), []byte(`"hub": "hub-004990"`)) {
		t.Fatalf("/debug/units page: total %s, %d units", rec.Header().Get("X-Total-Count"), bytes.Count(rec.Body.Bytes(), []byte(`"hub":`)))
	}
	rec = httptest.NewRecorder()
	b.unitsPage(rec, httptest.NewRequest(http.MethodGet, "/debug/units?limit=10", nil))
	if rec.Header().Get("X-Next-After") != "hub-000009" {
		t.Fatalf("first page of 10: next after %q", rec.Header().Get("X-Next-After"))
	}
	// The problems are the worst: every hub waited as long, so by name.
	if o.Problems[0].Hub != "hub-000000" || o.Problems[consoleRows-1].Hub != "hub-000099" {
		t.Fatalf("problems from %s to %s", o.Problems[0].Hub, o.Problems[consoleRows-1].Hub)
	}
}

// BenchmarkConsole measures what grows with the hubs at 200,000 hubs: the
// overview's pass over every unit with its page rendered, a search, and
// a /debug/units page. Each reports the response's size.
//
//	go test -run '^$' -bench BenchmarkConsole -benchtime 20x ./internal/console/
func BenchmarkConsole(b *testing.B) {
	br := consoleOf(b, 200_000)
	b.Run("overview", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := overviewTmpl.Execute(&buf, map[string]any{"O": br.unitOverview(), "Q": ""}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len()), "bytes/response")
	})
	b.Run("overview-served", func(b *testing.B) {
		// What a request costs: the last pass, rendered (the next pass
		// runs in the background, as overview measures it).
		var buf bytes.Buffer
		c := newOverviewCache()
		c.get(br.unitOverview)
		for b.Loop() {
			buf.Reset()
			c.mu.Lock()
			c.at = time.Now() // no background pass inside the measurement
			c.mu.Unlock()
			if err := overviewTmpl.Execute(&buf, map[string]any{"O": c.get(br.unitOverview), "Q": ""}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len()), "bytes/response")
	})
	b.Run("search", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			names, more, _ := br.searchHubs(context.Background(), "hub-1999")
			if err := overviewTmpl.Execute(&buf, map[string]any{"O": Overview{}, "Q": "hub-1999", "Found": names, "More": more}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len()), "bytes/response")
	})
	b.Run("units-page", func(b *testing.B) {
		var n int
		for b.Loop() {
			rec := httptest.NewRecorder()
			br.unitsPage(rec, httptest.NewRequest(http.MethodGet, "/debug/units?after=hub-100000", nil))
			n = rec.Body.Len()
		}
		b.ReportMetric(float64(n), "bytes/response")
	})
}

// topK keeps exactly what a full sort would put first.
func TestTopK(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 5, 100, 1000} {
		for _, k := range []int{0, 1, 7, 100} {
			all := make([]int, n)
			top := topK[int]{k: k, cmp: cmp.Compare[int]}
			for i := range all {
				all[i] = r.IntN(50)
				top.add(all[i])
			}
			slices.Sort(all)
			if got, want := top.sorted(), all[:min(k, n)]; !slices.Equal(got, want) {
				t.Fatalf("n %d, k %d: %v, want %v", n, k, got, want)
			}
		}
	}
}

// The console serves the last pass over the units and has Run refresh it
// once it is older than overviewMaxAge. The clock is synctest's.
func TestOverviewCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newOverviewCache()
		var passes atomic.Int32
		compute := func() Overview { return Overview{Hubs: int(passes.Add(1))} }
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.run(ctx, compute) }()

		if o := c.get(compute); o.Hubs != 1 {
			t.Fatalf("first get: pass %d", o.Hubs)
		}
		synctest.Wait()
		if o := c.get(compute); o.Hubs != 1 || passes.Load() != 1 {
			t.Fatalf("a fresh pass was computed again: %d passes", passes.Load())
		}
		time.Sleep(overviewMaxAge + time.Second)
		if o := c.get(compute); o.Hubs != 1 || o.AsOfSec < 3 {
			t.Fatalf("a stale get: pass %d, %.1fs old; want the last pass while the next runs", o.Hubs, o.AsOfSec)
		}
		synctest.Wait() // run has computed the next pass
		if o := c.get(compute); o.Hubs != 2 || passes.Load() != 2 {
			t.Fatalf("after the refresh: pass %d, %d passes; want 2", o.Hubs, passes.Load())
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestOverviewRefreshOwned: the refresh runs on Run's goroutine, so Run
// returns only once a pass in progress has finished, and no pass starts
// after it returned. Issue 21: get started the refresh on a goroutine of
// its own that nothing waited for.
func TestOverviewRefreshOwned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newOverviewCache()
		entered, finish := make(chan struct{}), make(chan struct{})
		var passes atomic.Int32
		compute := func() Overview {
			if passes.Add(1) == 2 {
				close(entered)
				<-finish
			}
			return Overview{}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.run(ctx, compute) }()
		c.get(compute)
		time.Sleep(overviewMaxAge + time.Second)
		c.get(compute) // stale: the second pass starts
		<-entered
		cancel()
		synctest.Wait()
		select {
		case <-done:
			t.Error("Run returned while a pass was running")
		default:
		}
		close(finish)
		<-done
		time.Sleep(overviewMaxAge + time.Second)
		c.get(compute) // stale again, after Run returned: no pass
		synctest.Wait()
		if n := passes.Load(); n != 2 {
			t.Fatalf("%d passes, want 2: none after Run returned", n)
		}
	})
}
