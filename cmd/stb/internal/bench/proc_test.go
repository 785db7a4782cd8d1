package bench

import (
	"math"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

func TestStatusRSS(t *testing.T) {
	for name, tc := range map[string]struct {
		status string
		want   int64
	}{
		"process":       {"Name:\tstb\nVmPeak:\t  900 kB\nVmRSS:\t  123456 kB\nRssAnon:\t 100 kB\n", 123456 << 10},
		"last line":     {"Name:\tstb\nVmRSS:\t2 kB", 2 << 10},
		"kernel thread": {"Name:\tkworker/0:1\nState:\tI (idle)\n", 0},
		"other unit":    {"VmRSS:\t123 MB\n", 0},
		"empty":         {"", 0},
	} {
		t.Run(name, func(t *testing.T) {
			if got := statusRSS([]byte(tc.status)); got != tc.want {
				t.Errorf("%d, want %d", got, tc.want)
			}
		})
	}
}

func TestStatCPU(t *testing.T) {
	// Fields 14 and 15 (utime, stime) in clock ticks of 10ms.
	const rest = " S 1 2 3 4 5 6 7 8 9 10 150 50 0 0 20 0 1 0"
	for name, tc := range map[string]struct {
		stat string
		want time.Duration
	}{
		"plain":                 {"42 (stb)" + rest, 2 * time.Second},
		"name with spaces":      {"42 (stb bench x)" + rest, 2 * time.Second},
		"name with parenthesis": {"42 (a) b (c))" + rest, 2 * time.Second},
		"no parenthesis":        {"42 stb" + rest, 0},
		"short":                 {"42 (stb) S 1 2", 0},
		"not numbers":           {"42 (stb) S 1 2 3 4 5 6 7 8 9 10 x y", 0},
	} {
		t.Run(name, func(t *testing.T) {
			if got := statCPU([]byte(tc.stat)); got != tc.want {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
}

func TestTrendOf(t *testing.T) {
	at := func(min float64) time.Duration { return time.Duration(min * float64(time.Minute)) }
	for name, tc := range map[string]struct {
		samples []rssSample
		want    rssTrend
	}{
		"none": {nil, rssTrend{}},
		"one":  {[]rssSample{{at(0), 100}}, rssTrend{First: 100, Last: 100, Max: 100}},
		"flat": {[]rssSample{{at(0), 100}, {at(1), 100}, {at(2), 100}}, rssTrend{First: 100, Last: 100, Max: 100}},
		"growing 50 a minute": {[]rssSample{{at(0), 100}, {at(1), 150}, {at(2), 200}},
			rssTrend{First: 100, Last: 200, Max: 200, SlopePerMinute: 50}},
		"a spike, no trend": {[]rssSample{{at(0), 100}, {at(1), 400}, {at(2), 100}},
			rssTrend{First: 100, Last: 100, Max: 400}},
		"shrinking": {[]rssSample{{at(0), 300}, {at(0.5), 200}, {at(1), 100}},
			rssTrend{First: 300, Last: 100, Max: 300, SlopePerMinute: -200}},
		"all at one moment": {[]rssSample{{at(1), 100}, {at(1), 300}}, rssTrend{First: 100, Last: 300, Max: 300}},
	} {
		t.Run(name, func(t *testing.T) {
			got := trendOf(tc.samples)
			if got.First != tc.want.First || got.Last != tc.want.Last || got.Max != tc.want.Max ||
				math.Abs(got.SlopePerMinute-tc.want.SlopePerMinute) > 1e-6 {
				t.Errorf("%+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestProcessFigures: this process's figures as the bench reads them for
// the bridge under test, and nothing for a process that is not there.
func TestProcessFigures(t *testing.T) {
	if rss := selfRSS(); rss < 1<<20 {
		t.Errorf("RSS of this process %d bytes, want at least a MiB", rss)
	}
	if rss := rssOf(strconv.Itoa(os.Getpid())); rss < 1<<20 {
		t.Errorf("RSS of this process by pid %d bytes", rss)
	}
	if rss := rssOf("0"); rss != 0 {
		t.Errorf("RSS of no process %d", rss)
	}
	start := selfCPU()
	for x := 0; selfCPU()-start < 20*time.Millisecond; x++ { // spin
	}
	if cpu := cpuOf(os.Getpid()); cpu <= 0 {
		t.Errorf("CPU time of this process from /proc %v, want some after spinning", cpu)
	}
	if cpu := cpuOf(0); cpu != 0 {
		t.Errorf("CPU time of no process %v", cpu)
	}
	runtime.GC()
	if heap := goLiveHeap(); heap <= 0 {
		t.Errorf("live heap %d", heap)
	}
	if load := loadAverage(); load < 0 || math.IsNaN(load) {
		t.Errorf("load average %v", load)
	}
}
