package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// benchReport is everything one `stb bench` invocation measured; it is
// also the --out file.
type benchReport struct {
	Started   time.Time         `json:"started"`
	Command   string            `json:"command"`
	Machine   machineInfo       `json:"machine"`
	Scenarios []*scenarioResult `json:"scenarios"`
}

type machineInfo struct {
	CPUs      int    `json:"cpus"`
	MemTotal  int64  `json:"memTotalBytes"`
	GoVersion string `json:"goVersion"`
	Postgres  string `json:"postgres"`
	PoolSize  int    `json:"dbPoolSize"`
}

// scenarioResult is one scenario: a row per variant side by side, the
// ratios between them and the targets they are held to.
type scenarioResult struct {
	Name   string         `json:"name"`
	Params map[string]any `json:"params"`
	Rows   []*variantRow  `json:"variants"`
	Ratios []*ratio       `json:"ratios"`
	Notes  []string       `json:"notes,omitempty"`
	Error  string         `json:"error,omitempty"`
}

// variantRow is one variant's figures. Cells keep the order they were
// added in, which is the order of the printed columns.
type variantRow struct {
	Role    string             `json:"role"` // a, b or c (a ceiling)
	Variant string             `json:"variant"`
	Values  map[string]float64 `json:"values"`
	Note    string             `json:"note,omitempty"`
	cells   []cell
}

type cell struct{ header, text string }

func (s *scenarioResult) row(role, variant string) *variantRow {
	r := &variantRow{Role: role, Variant: variant, Values: map[string]float64{}}
	s.Rows = append(s.Rows, r)
	return r
}

func (s *scenarioResult) note(format string, a ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, a...))
}

// set records a figure under its JSON key and prints text in column
// header.
func (r *variantRow) set(header, key string, v float64, text string) *variantRow {
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		r.Values[key] = v
	}
	r.cells = append(r.cells, cell{header, text})
	return r
}

// ratio compares two figures of a scenario, and says whether a target
// holds.
type ratio struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Target string  `json:"target,omitempty"`
	// Met is nil when the ratio has no target.
	Met *bool `json:"met,omitempty"`
	// By is how far the value is from the target: above 1 when missed.
	By     float64 `json:"missedBy,omitempty"`
	Detail string  `json:"detail,omitempty"`
	// Unit follows the value when printed (see withUnit); "×" when empty.
	Unit string `json:"unit,omitempty"`
}

// withUnit formats a ratio's value with its unit: a factor (no unit) and a
// unit of symbols ("/s") follow the number, a word ("CPU-s") after a
// space.
func withUnit(v float64, unit string) string {
	switch {
	case unit == "":
		return trimFloat(v) + "×"
	case unicode.IsLetter([]rune(unit)[0]):
		return trimFloat(v) + " " + unit
	}
	return trimFloat(v) + unit
}

func (s *scenarioResult) ratio(name string, v float64, detail string) *ratio {
	r := &ratio{Name: name, Value: v, Detail: detail}
	s.Ratios = append(s.Ratios, r)
	return r
}

// atLeast holds the ratio to a lower bound.
func (r *ratio) atLeast(target float64, label string) {
	r.Target = fmt.Sprintf("≥ %s%s", trimFloat(target), label)
	met := r.Value >= target
	r.Met = &met
	if !met && r.Value > 0 {
		r.By = target / r.Value
	}
}

// atMost holds the ratio to an upper bound.
func (r *ratio) atMost(target float64, label string) {
	r.Target = fmt.Sprintf("≤ %s%s", trimFloat(target), label)
	met := r.Value <= target
	r.Met = &met
	if !met && target > 0 {
		r.By = r.Value / target
	}
}

// print writes the scenario as a table, then its ratios and notes.
func (s *scenarioResult) print(w io.Writer) {
	fmt.Fprintf(w, "\n== %s", s.Name)
	if len(s.Params) > 0 {
		fmt.Fprintf(w, " (%s)", formatParams(s.Params))
	}
	fmt.Fprintln(w)
	if s.Error != "" {
		fmt.Fprintf(w, "   FAILED: %s\n", s.Error)
	}
	var headers []string
	seen := map[string]bool{}
	for _, r := range s.Rows {
		for _, c := range r.cells {
			if !seen[c.header] {
				seen[c.header] = true
				headers = append(headers, c.header)
			}
		}
	}
	if len(s.Rows) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "   \tvariant\t%s\tnote\n", strings.Join(headers, "\t"))
		for _, r := range s.Rows {
			texts := map[string]string{}
			for _, c := range r.cells {
				texts[c.header] = c.text
			}
			line := make([]string, len(headers))
			for i, h := range headers {
				if line[i] = texts[h]; line[i] == "" {
					line[i] = "-"
				}
			}
			fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\n", r.Role, r.Variant, strings.Join(line, "\t"), r.Note)
		}
		_ = tw.Flush()
	}
	for _, r := range s.Ratios {
		fmt.Fprintf(w, "   %-44s %8s", r.Name, withUnit(r.Value, r.Unit))
		switch {
		case r.Met == nil:
		case *r.Met:
			fmt.Fprintf(w, "   target %s: met", r.Target)
		case r.By > 0:
			fmt.Fprintf(w, "   target %s: MISSED by %s×", r.Target, trimFloat(r.By))
		default:
			fmt.Fprintf(w, "   target %s: MISSED", r.Target)
		}
		if r.Detail != "" {
			fmt.Fprintf(w, "  (%s)", r.Detail)
		}
		fmt.Fprintln(w)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "   * %s\n", n)
	}
}

// printSummary prints, when scenarios ran more than once, each ratio's
// median and range over the repetitions, and how often its target held.
func (r *benchReport) printSummary(w io.Writer) {
	type series struct {
		values       []float64
		met          int
		target, unit string
	}
	var order []string
	byKey := map[string]*series{}
	runs := map[string]int{}
	for _, s := range r.Scenarios {
		base, _, _ := strings.Cut(s.Name, " #")
		runs[base]++
		for _, ra := range s.Ratios {
			key := base + "\x00" + ra.Name
			se := byKey[key]
			if se == nil {
				se = &series{target: ra.Target, unit: ra.Unit}
				byKey[key] = se
				order = append(order, key)
			}
			se.values = append(se.values, ra.Value)
			if ra.Met != nil && *ra.Met {
				se.met++
			}
		}
	}
	repeated := false
	for _, n := range runs {
		repeated = repeated || n > 1
	}
	if !repeated {
		return
	}
	fmt.Fprintf(w, "\n== summary over the repetitions: median (min – max)\n")
	for _, key := range order {
		base, name, _ := strings.Cut(key, "\x00")
		se := byKey[key]
		v := slices.Clone(se.values)
		slices.Sort(v)
		median := v[len(v)/2]
		if len(v)%2 == 0 {
			median = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		fmt.Fprintf(w, "   %-10s %-44s %8s  (%s – %s)", base, name, withUnit(median, se.unit), trimFloat(v[0]), trimFloat(v[len(v)-1]))
		if se.target != "" {
			fmt.Fprintf(w, "   target %s met in %d of %d", se.target, se.met, len(v))
		}
		fmt.Fprintln(w)
	}
}

func formatParams(p map[string]any) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := p[k]
		if n, ok := v.(int); ok {
			v = thousands(int64(n))
		}
		parts[i] = fmt.Sprintf("%s %v", k, v)
	}
	return strings.Join(parts, ", ")
}

// writeJSON writes the report to path.
func (r *benchReport) writeJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// trimFloat formats a ratio or factor with three significant digits.
func trimFloat(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "n/a"
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// thousands formats n with thin separators: 1,000,000.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// secs formats a duration in seconds for a table cell.
func secs(d time.Duration) string {
	if d >= 100*time.Second {
		return fmt.Sprintf("%.0fs", d.Seconds())
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// perSecond formats n per d.
func perSecond(n float64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return thousands(int64(math.Round(n / d.Seconds())))
}
