package humanize

import (
	"math"
	"testing"
)

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 100: "100B", 1536: "1536B", 64 << 10: "64KiB", 4 << 20: "4MiB", 3 << 30: "3GiB", 1<<20 + 1<<10: "1025KiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSeconds(t *testing.T) {
	for s, want := range map[float64]string{0.0625: "63ms", 1.5: "1.5s", 0: "0s"} {
		if got := Seconds(s); got != want {
			t.Errorf("Seconds(%v) = %q, want %q", s, got, want)
		}
	}
	if got := Seconds(math.NaN()); got != "n/a" {
		t.Errorf("Seconds(NaN) = %q, want n/a", got)
	}
}
