package deadletter

import (
	"fmt"
	"strings"
)

// Quote shows a name from the network (a hub, a type, a version) on a
// terminal so that control characters and blanks cannot pass for the
// layout around it: as it is when that is safe, else Go-quoted; "-" when
// empty.
func Quote(s string) string {
	if s == "" {
		return "-"
	}
	q := fmt.Sprintf("%q", s)
	if q[1:len(q)-1] == s && !strings.ContainsAny(s, " \t") {
		return s
	}
	return q
}

// FirstLine returns the first line of s, cut at n bytes, Quoted: how a
// letter's error shows on one line of a listing.
func FirstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return Quote(s)
}
