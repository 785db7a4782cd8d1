// Package humanize formats sizes and durations for the command line's
// progress lines and tables.
package humanize

import (
	"fmt"
	"math"
	"time"
)

// Bytes formats n in the largest binary unit that divides it exactly
// (4MiB, 1536KiB, 100B), so that it reads back as the same flag value.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// Seconds formats a number of seconds as a duration rounded to the
// millisecond, or "n/a" for NaN (a quantile of an empty histogram).
func Seconds(s float64) string {
	if math.IsNaN(s) {
		return "n/a"
	}
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}
