package profile

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// A summary written through the progress line starts on a line of its
// own, after the progress shown; without progress shown, nothing is
// added.
func TestProgressLineEndsBeforeTheSummary(t *testing.T) {
	var w, out bytes.Buffer
	p := &ProgressLine{W: &w, Out: &out}
	p.Sent(1) // the first call only starts the clock
	p.last = time.Now().Add(-2 * time.Second)
	p.Sent(7)
	fmt.Fprintln(p, "summary")
	p.End()
	if w.String() != "\rsimulate: 7 messages sent\n" || out.String() != "summary\n" {
		t.Errorf("progress %q, out %q", w.String(), out.String())
	}
	w.Reset()
	q := &ProgressLine{W: &w, Out: &out}
	q.Sent(1)
	fmt.Fprint(q, "x")
	q.End()
	if w.Len() != 0 {
		t.Errorf("no progress shown, yet %q on W", w.String())
	}
}
