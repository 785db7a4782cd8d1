package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stbridge/stb/internal/humanize"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/transport"
)

// envName is the environment variable that sets flag flagName of the
// command whose flag set is named cmd (see envPrefix): the prefix and the
// flag's name in upper case with dashes as underscores (`stb run
// --db-pool-size` is STB_DB_POOL_SIZE, `stb demo --hubs` STB_DEMO_HUBS).
func envName(cmd, flagName string) string {
	return envPrefix(cmd, flagName) + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// envPrefix is the prefix of a command's environment variables. `stb run`
// and `stb migrate`, the production commands of the deployment, read STB_*
// (the README's table, deploy/kubernetes). Every other command reads
// variables of its own, STB_<COMMAND>_*, so that a variable exported for
// one command (STB_DATABASE_URL for production) never reaches another
// (`stb demo` recreating a database): STB_DEMO_*, STB_SIMULATE_*,
// STB_VERIFY_*, STB_BENCH_*, STB_BROKER_* for `stb kafka` (STB_KAFKA_* are
// the bridge's), STB_HUB_*, STB_DEADLETTERS_*, STB_WORK_*. The operator's
// commands that act on the bridge's own database and brokers (hub,
// deadletters, work) read `stb run`'s variables for those: sharedWithRun.
func envPrefix(cmd, flagName string) string {
	word, _, _ := strings.Cut(cmd, " ")
	switch {
	case word == "run" || word == "migrate" || word == "":
		return "STB_"
	case operatorCommands[word] && sharedWithRun[flagName]:
		return "STB_"
	case word == "kafka":
		word = "broker"
	}
	return "STB_" + strings.ToUpper(word) + "_"
}

// operatorCommands act on the bridge's own database and brokers.
var operatorCommands = map[string]bool{"hub": true, "deadletters": true, "work": true}

// sharedWithRun are the flags the operator's commands share with `stb run`
// by meaning: the production database and brokers.
var sharedWithRun = map[string]bool{"database-url": true, "kafka-brokers": true, "kafka-property": true}

// newFlagSet returns a flag set whose usage lists each flag with its
// environment variable and default.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: stb %s [flags]\n\n%s\n\nFlags (each also settable by its environment variable):\n", name, synopsis)
		fs.VisitAll(func(f *flag.Flag) {
			def := f.DefValue
			if def == "" {
				def = `""`
			}
			fmt.Fprintf(w, "  --%s (%s, default %s)\n      %s\n", f.Name, envName(name, f.Name), def, f.Usage)
		})
	}
	return fs
}

// parseFlags parses args, then fills every flag not given on the command
// line from its environment variable. Command line beats environment beats
// default. An error names the flag or variable, the value (a secret's
// redacted, see shownValue) and the form expected; an unknown flag gets
// the closest defined one as a suggestion instead of the whole usage,
// which --help prints.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []string
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		name := envName(fs.Name(), f.Name)
		v, ok := os.LookupEnv(name)
		if !ok {
			return
		}
		var err error
		if es, ok := f.Value.(envSetter); ok {
			err = es.SetEnv(v)
		} else {
			err = fs.Set(f.Name, v)
		}
		if err != nil {
			errs = append(errs, badValue(name, "=", f, v, err)+" (the variable of --"+f.Name+")")
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("bad environment: %s", strings.Join(errs, "; "))
	}
	return nil
}

// parseArgs is fs.Parse with errors that help: the flag package's own
// print the whole usage after "flag provided but not defined", and a
// value's error is its parser's ("parse error").
func parseArgs(fs *flag.FlagSet, args []string) error {
	var failed struct {
		f     *flag.Flag
		value string
		err   error
	}
	orig := map[string]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		orig[f.Name] = f.Value
		f.Value = recordingValue{Value: f.Value, failed: func(v string, err error) {
			if failed.f == nil {
				failed.f, failed.value, failed.err = f, v, err
			}
		}}
	})
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.VisitAll(func(f *flag.Flag) { f.Value = orig[f.Name] })
	help := fmt.Sprintf("'stb %s --help' lists the flags", fs.Name())
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case failed.f != nil:
		failed.f.Value = orig[failed.f.Name]
		return errors.New(badValue("--"+failed.f.Name, " ", failed.f, failed.value, failed.err))
	}
	if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
		msg := "flag --" + name + " is not defined"
		if s := closestFlag(fs, name); s != "" {
			msg += "; did you mean --" + s + "?"
		}
		return fmt.Errorf("%s (%s)", msg, help)
	}
	if name, ok := strings.CutPrefix(err.Error(), "flag needs an argument: -"); ok {
		return fmt.Errorf("--%s needs a value (%s)", name, help)
	}
	return fmt.Errorf("%w (%s)", err, help)
}

// recordingValue reports the first value its flag refuses, so that
// parseArgs can say what was wrong in its own words.
type recordingValue struct {
	flag.Value
	failed func(value string, err error)
}

func (r recordingValue) Set(s string) error {
	err := r.Value.Set(s)
	if err != nil {
		r.failed(s, err)
	}
	return err
}

// IsBoolFlag keeps a boolean flag standing alone (--migrate).
func (r recordingValue) IsBoolFlag() bool {
	b, ok := r.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// badValue says that what (a flag or a variable) refused value, shown as
// shownValue shows it after sep, and what it expects.
func badValue(what, sep string, f *flag.Flag, value string, err error) string {
	shown := shownValue(f.Name, value)
	if shown != "" {
		shown = fmt.Sprintf("%s%q", sep, shown)
	}
	if form := expectedForm(f.Value); form != "" {
		return fmt.Sprintf("%s%s: want %s", what, shown, form)
	}
	return fmt.Sprintf("%s%s: %v", what, shown, err)
}

// shownValue is a refused value as an error may show it: a database URL
// with its passwords redacted, nothing of a Kafka property (it may be a
// password given without its key), any other value as it is.
func shownValue(flagName, value string) string {
	switch {
	case strings.HasSuffix(flagName, "database-url"):
		return db.RedactURL(value)
	case strings.HasSuffix(flagName, "kafka-property"):
		return ""
	}
	return value
}

// expectedForm names the form a flag of a standard type takes; "" for the
// project's own values, whose errors say it.
func expectedForm(v flag.Value) string {
	g, ok := v.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration such as 5s or 1m (0 is 0s)"
	case bool:
		return "true or false"
	case int, int64:
		return "a whole number such as 8"
	case uint, uint64:
		return "a whole number, 0 or more"
	case float64:
		return "a number such as 0.5 or 100"
	}
	return ""
}

// closestFlag is the defined flag nearest to name by edit distance, if it
// is near enough to be the one meant; "" otherwise.
func closestFlag(fs *flag.FlagSet, name string) string {
	best, bestD := "", max(2, len(name)/3)+1
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(name, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// listValue binds a repeatable, comma-separated flag to a string slice
// with a default: the first Set replaces the default, later ones (the flag
// repeated) append.
type listValue struct {
	dst *[]string
	set bool
}

func newListValue(dst *[]string, def []string) *listValue {
	*dst = def
	return &listValue{dst: dst}
}

func (l *listValue) String() string {
	if l == nil || l.dst == nil {
		return ""
	}
	return strings.Join(*l.dst, ",")
}

func (l *listValue) Set(s string) error {
	if !l.set {
		*l.dst, l.set = nil, true
	}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l.dst = append(*l.dst, p)
		}
	}
	return nil
}

// envSetter is a flag value whose environment variable holds several
// values where the command line gives one per flag.
type envSetter interface {
	SetEnv(s string) error
}

// propertyFlag collects key=value pairs: one per --kafka-property, taken
// whole (a value may hold commas: debug=broker,topic, a password); in the
// environment variable, several separated by newlines or, when there is
// no newline, by commas.
type propertyFlag map[string]string

// String shows the properties with every credential redacted
// (transport.SecretProperty): it is what logs and usage texts print.
func (p propertyFlag) String() string { return transport.RedactedProperties(p) }

// Set takes one key=value pair, whole.
func (p propertyFlag) Set(s string) error {
	k, v, ok := strings.Cut(strings.TrimSpace(s), "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		// Never the text itself: it may be a secret given without its key.
		return fmt.Errorf("want key=value, got %d characters without a key", len(s))
	}
	p[k] = v
	return nil
}

// SetEnv takes the pairs of the environment variable.
func (p propertyFlag) SetEnv(s string) error {
	sep := ","
	if strings.Contains(s, "\n") {
		sep = "\n"
	}
	for _, kv := range strings.Split(s, sep) {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		if err := p.Set(kv); err != nil {
			return err
		}
	}
	return nil
}

// negatedBool binds a boolean flag to the negation of a field: the
// component's option says what is off (conflation.Config.NoConflation),
// the flag what is on (--conflation).
type negatedBool struct{ off *bool }

func (n negatedBool) String() string {
	if n.off == nil {
		return "true"
	}
	return strconv.FormatBool(!*n.off)
}

func (n negatedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*n.off = !v
	return nil
}

// IsBoolFlag lets --conflation stand alone, as a bool flag does.
func (negatedBool) IsBoolFlag() bool { return true }

// intByteSize is byteSize for an int option (transport.Config.MaxBundleBytes,
// conflation.Config.MaxDeltaBytes).
type intByteSize int

func (b *intByteSize) String() string {
	v := byteSize(*b)
	return v.String()
}

func (b *intByteSize) Set(s string) error {
	var v byteSize
	if err := v.Set(s); err != nil {
		return err
	}
	if int64(int(v)) != int64(v) {
		return fmt.Errorf("want a size like 4MiB, got %q", s)
	}
	*b = intByteSize(v)
	return nil
}

// byteSize is an int flag that accepts KiB/MiB/GiB suffixes.
type byteSize int64

func (b *byteSize) String() string { return humanize.Bytes(int64(*b)) }

func (b *byteSize) Set(s string) error {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return fmt.Errorf("want a size like 4MiB, got %q", s)
	}
	*b = byteSize(n * mult)
	return nil
}
