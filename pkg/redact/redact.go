package redact

import (
	"strings"
	"unicode/utf8"
)

// Mask stands for a hidden value wherever it would show.
const Mask = "***"

// Error returns err with its text edited by oldnew, pairs of an old string
// and the new one that replaces it, applied one after the other as
// strings.ReplaceAll would (an empty old string is passed over). The
// result unwraps to err, so errors.Is and errors.As still see through it;
// it is err itself when nothing in its text changed, and nil for a nil err.
// It panics if oldnew has an odd number of elements, as
// strings.NewReplacer does.
func Error(err error, oldnew ...string) error {
	if len(oldnew)%2 == 1 {
		panic("redact.Error: odd argument count")
	}
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for i := 0; i < len(oldnew); i += 2 {
		if oldnew[i] != "" {
			clean = strings.ReplaceAll(clean, oldnew[i], oldnew[i+1])
		}
	}
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

// redactedError shows its edited text and unwraps to the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Unwrap lets errors.Is and errors.As see the cause; its own text is not
// shown by them.
func (e *redactedError) Unwrap() error { return e.err }

// Cap returns s cut to at most n bytes on a UTF-8 boundary, with "…"
// marking the cut; s itself when it is short enough.
func Cap(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
