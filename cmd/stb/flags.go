package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/stbridge/stb/internal/humanize"
	"github.com/stbridge/stb/pkg/transport"
)

// envName is the environment variable that sets a flag: STB_ and the flag's
// name in upper case with dashes as underscores (--db-pool-size is
// STB_DB_POOL_SIZE).
func envName(flagName string) string {
	return "STB_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

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
			fmt.Fprintf(w, "  --%s (%s, default %s)\n      %s\n", f.Name, envName(f.Name), def, f.Usage)
		})
	}
	return fs
}

// parseFlags parses args, then fills every flag not given on the command
// line from its environment variable. Command line beats environment beats
// default.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
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
		v, ok := os.LookupEnv(envName(f.Name))
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
			errs = append(errs, fmt.Sprintf("%s: %v", envName(f.Name), err))
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("bad environment: %s", strings.Join(errs, "; "))
	}
	return nil
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
		return errors.New("parse error")
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
