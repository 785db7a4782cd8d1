package bench

import (
	"bytes"
	"testing"
)

// TestOutput: on a terminal the progress line is rewritten in place
// (padded over a longer one) and ended before a line that stays; in a log
// a progress line is printed whole, at most every logProgressEvery.
func TestOutput(t *testing.T) {
	for name, tc := range map[string]struct {
		tty  bool
		want string
	}{
		"terminal": {true, "\rread 100/200\rread 2/200  \nbench: variant done\nbench: next\n\r[next] 1\n"},
		"log":      {false, "read 100/200\nbench: variant done\nbench: next\n[next] 1\n"},
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			o := newOutputTo(&b, tc.tty)
			o.progress("read %d/%d", 100, 200)
			o.progress("read %d/%d", 2, 200) // a log skips it: too soon
			o.say("variant %s", "done")
			o.say("next") // no progress line open: nothing to end
			o.progress("[next] %d", 1)
			o.done()
			o.done()
			if b.String() != tc.want {
				t.Errorf("printed %q, want %q", b.String(), tc.want)
			}
		})
	}
}
