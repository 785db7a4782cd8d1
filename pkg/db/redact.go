package db

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/stbridge/stb/pkg/redact"
)

// redacted replaces every password this package would otherwise print:
// "xxxxx", as pgconn writes a connection string in its own errors, so
// that a password shows the same way whichever of the two printed it.
const redacted = "xxxxx"

var (
	// userinfoPassword matches "scheme://user:password@" in a URL that
	// net/url cannot parse. It is greedy up to the last '@', as net/url is,
	// so a password holding an '@' is hidden whole.
	userinfoPassword = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://[^:/@]*:)(.*)@`)
	// keywordPassword matches password=... and sslpassword=... both in
	// keyword/value strings (quoted or not) and in URL query strings.
	keywordPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)`)
)

// RedactURL returns the PostgreSQL connection string s with every password
// replaced by "xxxxx": the user-info password and password/sslpassword
// query parameters of a URL, or password/sslpassword of a keyword/value
// string. It is meant for logs and error messages, and over-redacts rather
// than leak when s is malformed.
func RedactURL(s string) string {
	if isURL(s) {
		if u, err := url.Parse(s); err == nil {
			if _, ok := u.User.Password(); ok {
				u.User = url.UserPassword(u.User.Username(), redacted)
			}
			if q := u.Query(); q.Has("password") || q.Has("sslpassword") {
				for _, k := range []string{"password", "sslpassword"} {
					if q.Has(k) {
						q.Set(k, redacted)
					}
				}
				u.RawQuery = q.Encode()
			}
			return u.String()
		}
		s = userinfoPassword.ReplaceAllString(s, "${1}"+redacted+"@")
	}
	return keywordPassword.ReplaceAllString(s, "${1}"+redacted)
}

// isURL reports whether s is written as a URL, of any scheme: a typo in
// the scheme ("postgress://user:pw@…") must not let its password through.
func isURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && scheme != "" && !strings.ContainsAny(scheme, " =")
}

// secrets returns the password spellings that may appear in an error about
// connection string s: decoded and still-escaped, from the user info, the
// query or keyword/value pairs.
func secrets(s string) []string {
	var out []string
	add := func(v string) {
		v = strings.Trim(v, "'")
		if v != "" && v != redacted {
			out = append(out, v)
		}
	}
	if isURL(s) {
		if u, err := url.Parse(s); err == nil {
			if p, ok := u.User.Password(); ok {
				add(p)
			}
			for _, k := range []string{"password", "sslpassword"} {
				add(u.Query().Get(k))
			}
		}
		if m := userinfoPassword.FindStringSubmatch(s); m != nil {
			add(m[2]) // as written, possibly percent-encoded
		}
	}
	for _, m := range keywordPassword.FindAllStringSubmatch(s, -1) {
		add(m[2])
		if d, err := url.QueryUnescape(m[2]); err == nil {
			add(d)
		}
	}
	return out
}

// RedactError returns err with connString and its passwords redacted from
// its text, for errors of code that was handed a connection string (the
// parse errors of net/url and pgconn quote it, password included). The
// result unwraps to err, so errors.Is and errors.As still see through it.
// It returns nil for a nil err.
func RedactError(err error, connString string) error {
	oldnew := []string{connString, RedactURL(connString)}
	for _, p := range secrets(connString) {
		oldnew = append(oldnew, p, redacted, url.QueryEscape(p), redacted, url.PathEscape(p), redacted)
	}
	return redact.Error(err, oldnew...)
}
