package bench

import (
	"fmt"
	"io"
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
	w       io.Writer
	tty     bool
	open    bool // a progress line is on the terminal without its newline
	last    time.Time
	every   time.Duration
	lastLen int
}

// logProgressEvery is how often a progress line is printed when stderr is
// not a terminal.
const logProgressEvery = 5 * time.Second

func newBenchOutput() *benchOutput {
	fi, err := os.Stderr.Stat()
	return newOutputTo(os.Stderr, err == nil && fi.Mode()&os.ModeCharDevice != 0)
}

// newOutputTo prints to w, rewriting the progress line in place if tty.
func newOutputTo(w io.Writer, tty bool) *benchOutput {
	if tty {
		return &benchOutput{w: w, tty: true}
	}
	return &benchOutput{w: w, every: logProgressEvery}
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
		fmt.Fprintln(o.w, line)
		return
	}
	pad := max(0, o.lastLen-len(line))
	fmt.Fprintf(o.w, "\r%s%s", line, strings.Repeat(" ", pad))
	o.open, o.lastLen = true, len(line)
}

// done ends the progress line of a variant.
func (o *benchOutput) done() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.open {
		fmt.Fprintln(o.w)
	}
	o.open, o.lastLen, o.last = false, 0, time.Time{}
}

// say prints a line that stays.
func (o *benchOutput) say(format string, a ...any) {
	o.done()
	fmt.Fprintf(o.w, "bench: "+format+"\n", a...)
}
