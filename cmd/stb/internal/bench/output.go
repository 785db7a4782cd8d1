package bench

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// benchOutput prints progress lines to stderr while a variant runs: one
// line rewritten in place on a terminal, a line every few seconds
// otherwise (a log). Results go to stdout.
type benchOutput struct {
	mu      sync.Mutex
	tty     bool
	open    bool // a progress line is on the terminal without its newline
	last    time.Time
	every   time.Duration
	lastLen int
}

func newBenchOutput() *benchOutput {
	o := &benchOutput{every: 5 * time.Second}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		o.tty, o.every = true, 0
	}
	return o
}

// progress shows the current state of the running variant.
func (o *benchOutput) progress(format string, a ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if time.Since(o.last) < o.every {
		return
	}
	o.last = time.Now()
	line := fmt.Sprintf(format, a...)
	if !o.tty {
		fmt.Fprintln(os.Stderr, line)
		return
	}
	pad := max(0, o.lastLen-len(line))
	fmt.Fprintf(os.Stderr, "\r%s%s", line, strings.Repeat(" ", pad))
	o.open, o.lastLen = true, len(line)
}

// done ends the progress line of a variant.
func (o *benchOutput) done() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.open {
		fmt.Fprintln(os.Stderr)
	}
	o.open, o.lastLen, o.last = false, 0, time.Time{}
}

// say prints a line that stays.
func (o *benchOutput) say(format string, a ...any) {
	o.done()
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...)
}
