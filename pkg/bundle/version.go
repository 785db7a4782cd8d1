package bundle

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version orders the bundles of one hub and type. The agent bumps
// Incarnation when it restarts and Generation on every bundle it sends, so
// versions compare lexicographically: incarnation first, then generation.
type Version struct {
	Incarnation uint64
	Generation  uint64
}

// ErrMalformedVersion is returned by ParseVersion for text that is not
// "<incarnation>.<generation>" with both parts unsigned 64-bit decimals.
var ErrMalformedVersion = errors.New("malformed version")

// ParseVersion parses the wire form "<incarnation>.<generation>".
func ParseVersion(s string) (Version, error) {
	inc, gen, ok := strings.Cut(s, ".")
	if !ok {
		return Version{}, fmt.Errorf("%w: %q has no '.'", ErrMalformedVersion, s)
	}
	i, err := parseUint(inc)
	if err != nil {
		return Version{}, fmt.Errorf("%w: incarnation of %q: %v", ErrMalformedVersion, s, err)
	}
	g, err := parseUint(gen)
	if err != nil {
		return Version{}, fmt.Errorf("%w: generation of %q: %v", ErrMalformedVersion, s, err)
	}
	return Version{Incarnation: i, Generation: g}, nil
}

// parseUint accepts only plain decimal digits: no sign, no spaces, no
// underscores, no base prefixes, so that one version has one spelling.
func parseUint(s string) (uint64, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("non-digit %q", s[i])
		}
	}
	return strconv.ParseUint(s, 10, 64)
}

// String returns the wire form.
func (v Version) String() string {
	return strconv.FormatUint(v.Incarnation, 10) + "." + strconv.FormatUint(v.Generation, 10)
}

// Compare returns -1, 0 or +1 as v is older than, equal to or newer than w.
func (v Version) Compare(w Version) int {
	switch {
	case v.Incarnation < w.Incarnation:
		return -1
	case v.Incarnation > w.Incarnation:
		return 1
	case v.Generation < w.Generation:
		return -1
	case v.Generation > w.Generation:
		return 1
	}
	return 0
}

// Newer reports whether v is strictly newer than w.
func (v Version) Newer(w Version) bool { return v.Compare(w) > 0 }
