// Package profile defines what a wire profile is: the Profile value each
// profile's package (internal/profiles/stb, globalhub, work, cne) returns,
// with the hooks the bridge, cmd/stb, the demo, the bench and the console
// call instead of naming the profile.
//
// It is a package of its own so that the profiles' packages can build
// their values without importing internal/profiles, which imports them
// all to make its one list (profiles.All). The hooks that need the
// bridge or the demo's machinery receive it through the small types here
// (Stage, StartupEnv) rather than importing it, which would make a cycle
// (internal/bridge imports internal/profiles).
package profile

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/stbridge/stb/dbsyncers"
	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/sim"
	"github.com/stbridge/stb/pkg/transport"
)

// Profile is one wire profile: a family of bundle types and, unless the
// reader decodes its events itself (stb, globalhub), how its CloudEvents
// become bundles; and the simulated agents that speak it.
type Profile struct {
	Name string
	// Help says in a few words what the profile reads, for --help.
	Help string
	// Syncers returns the profile's bundle types in priority order; they
	// are registered after those of the profiles listed before it.
	Syncers func() []dbsyncers.Syncer
	// Family, nil for stb and globalhub, returns the mapping of the
	// profile's events onto its bundles; the reader gets a new one per
	// bridge.
	Family func() transport.Family
	// KeyFenced: the profile's bundles carry no hub-level version; each
	// row keeps its own fence. Its types take a constant version and
	// equal ones (bundle.TypeInfo.TakesEqual), so stb.bundle_versions
	// passes everything, and the real fence is per key in the profile's
	// tables. A hub delete removes such a type's version row instead of
	// leaving a tombstone, which would be at the constant version and so
	// refuse every later bundle of the hub for good, and a bridge's memory
	// does not fence the type after the delete: the hub's next bundle is
	// taken, as a newer incarnation of a hub is.
	KeyFenced bool
	// HubTables returns the tables holding the profile's rows of a hub
	// that a hub delete or reset must remove (or soft-delete, or mark:
	// db.HubTable) and would not find by itself (it finds the tables of
	// schema stb with a hub column); nil when there are none.
	HubTables func() []db.HubTable
	// Agents are the simulated senders of the profile's wire format
	// (`stb simulate|demo|bench --agent NAME`); their names are unique
	// over every profile.
	Agents []Agent
	// Verify checks the database against an expected-state file that
	// `stb simulate` wrote for one of the profile's agents. It returns
	// claimed false, and nothing else, when the file is not of the
	// profile's (another profile's Verify reads it); nil: the profile's
	// agents' files are verified by another profile's Verify (globalhub's
	// by stb's: one simulator writes both).
	Verify func(ctx context.Context, pool *pgxpool.Pool, path string) (claimed bool, _ Verdict, _ error)
	// HubSection, nil for none, loads what the console's hub page shows
	// of the profile's rows of a hub (at most limit rows); a section
	// without rows and without an error is not shown.
	HubSection func(ctx context.Context, pool *pgxpool.Pool, hub string, limit int) (Section, error)
	// Startup are the profile's start-up steps, each turned on by an
	// option of its own (bridge.Config.Startup), run by the bridge once
	// the database is ready and before it reads.
	Startup []StartupStep
}

// Verdict is what a profile's Verify found.
type Verdict struct {
	// OK: the database holds the expected state.
	OK bool
	// Matched says what matched, for "verify: ok: …".
	Matched string
	// Summary says what differs, when not OK.
	Summary string
}

// Section is a table the console shows on a hub's page.
type Section struct {
	// ID is the table's HTML id; Title its heading.
	ID, Title string
	// Columns are the headings; each row has a cell per column.
	Columns []string
	Rows    [][]string
}

// Agent is a simulated sender of a profile's wire format.
type Agent struct {
	Name string
	// Help says in a few words what the agent sends, for --agent's help.
	Help string
	// Bind registers the agent's own flags on fs (every agent's are
	// registered, so that --help lists them all; name them
	// "--<agent>-…" or say "with --agent NAME") and returns the agent's
	// commands, which read those flags once fs is parsed.
	Bind func(fs *flag.FlagSet) Commands
	// TopicPerHub: unless a topic is named, each simulated hub publishes
	// to a topic of its own (sim.GlobalHubTopicPrefix and the hub's
	// name), of one partition, as the global-hub agent does; the demo and
	// the bench (unless --gh-shared-topic) make and read those.
	TopicPerHub bool
	// Bench is how `stb bench --agent NAME` measures the agent.
	Bench Bench
}

// Commands are what an agent does in `stb simulate` and `stb demo`.
type Commands struct {
	// Sim, nil for none, sets the agent's flags on the shared simulation
	// config before Simulate or Demo run with it.
	Sim func(*sim.Config)
	// Simulate publishes the agent's simulation to Kafka and writes the
	// expected final state to run.Expected.
	Simulate func(ctx context.Context, run SimulateRun) error
	// Demo, nil for the hubs' demo (internal/demo.Run, which reads
	// run.Sim), runs the agent's demo on run's stage.
	Demo func(ctx context.Context, run DemoRun) (ok bool, err error)
}

// SimulateRun is one `stb simulate`: the shared flags, and where to
// publish and write the expected state.
type SimulateRun struct {
	// Sim holds the shared flags (--hubs, --clusters, --generations,
	// --seed, --rate, --restart-probability, --topic, …); each agent
	// says what it makes of them.
	Sim        sim.Config
	Brokers    string
	TypePrefix string
	// Expected is the file the expected final state is written to.
	Expected string
	// ResyncTopic and ResyncQuiet: answer the bridge's resync requests
	// after the rounds (the hubs' agents only).
	ResyncTopic string
	ResyncQuiet time.Duration
	// Out receives the summary line, Progress the messages sent so far.
	Out      io.Writer
	Progress func(sent int)
	Logger   *zap.Logger
}

// DemoRun is one `stb demo` of an agent with a Demo of its own.
type DemoRun struct {
	// Sim holds the shared flags, as in SimulateRun.
	Sim sim.Config
	// Out receives the progress lines and the summary.
	Out    io.Writer
	Logger *zap.Logger
	// Start sets the stage up: a fresh database, the embedded broker
	// holding topics (of partitions partitions; 0: the demo's
	// --partitions), and a bridge reading them with profiles on; console
	// says where to look in the console. Close the stage when done.
	Start func(ctx context.Context, topics []string, partitions int, profiles []string, console string) (Stage, error)
}

// Say prints a demo line ("demo: …").
func (r DemoRun) Say(format string, a ...any) {
	fmt.Fprintf(r.Out, "demo: "+format+"\n", a...)
}

// Stage is what a demo runs on (internal/demo sets it up): the embedded
// broker, a fresh database and a bridge reading one into the other.
type Stage interface {
	// Brokers is the embedded broker's address.
	Brokers() string
	// Pool is a pool of the demo's database, to verify with.
	Pool() *pgxpool.Pool
	// Follow runs publish while the bridge reads (publish reports through
	// sent how many messages it has sent, and returns how many it sent in
	// all), printing a progress line every second; then published is
	// called, and verify every second until it holds with every message
	// committed or the demo's timeout passes. It returns the last verify's
	// answer.
	Follow(ctx context.Context, publish func(ctx context.Context, sent func(int)) (int, error),
		published func(after time.Duration), verify func(ctx context.Context) (bool, error)) (bool, error)
	// Close stops the bridge and releases the rest.
	Close()
}

// Bench is how the bench measures an agent.
type Bench struct {
	// CatchUpOnly: the agent is measured in the catch-up scenario only
	// (the others are STB's wire format).
	CatchUpOnly bool
	// Profiles the bridge under test reads, whose registry the ceilings
	// decode and write with; nil: the bridge's default profiles, and
	// STB's own registry (dbsyncers.Default).
	Profiles []string
	// Decoder, nil for transport.Decode, returns a new decoding of the
	// agent's events as the reader does, for the read+decode ceiling.
	Decoder func() func(*kafka.Message, transport.Rules, time.Time) (*bundle.Bundle, *transport.Reject)
	// CatchUp names the bench's catch-up variant of the agent; empty:
	// the hubs' catch-up.
	CatchUp string
	// Scale, when set, is a simulation of the agent's own published scale
	// test (the bench's scale scenario, measured besides catch-up): its
	// first round is the initial sync, each later one a rotation; the
	// bench sets the topic and seed.
	Scale *sim.Config
}

// StartupStep is one start-up step of a profile, run by the bridge once
// the database is migrated and before it reads, when its option is set.
type StartupStep struct {
	// Flag is the step's option: `stb run --<Flag> VALUE` turns it on
	// (bridge.Config.Startup[Flag]); the bridge refuses it when the
	// profile is not on.
	Flag string
	// Help is the flag's help text.
	Help string
	// Run does the step with the option's value. A failure is logged,
	// not fatal: a start-up step is a convenience (a resync), not a
	// condition of reading.
	Run func(ctx context.Context, env StartupEnv) (summary []zap.Field, err error)
}

// StartupEnv is what a start-up step gets from the bridge.
type StartupEnv struct {
	// Value is the step's option's value.
	Value string
	// DatabaseURL is the bridge's database, migrated.
	DatabaseURL string
	// Kafka is the bridge's brokers and librdkafka properties, to publish
	// with.
	Kafka  transport.PublisherConfig
	Logger *zap.Logger
}

// ProgressLine is how `stb simulate` shows progress: "\rsimulate: N
// messages sent" on W at most once a second (Sent, a
// SimulateRun.Progress), the line ended before anything is written
// through it to Out (it is the run's Out) and by End.
type ProgressLine struct {
	W, Out io.Writer
	last   time.Time
	shown  bool
}

// Sent shows that n messages were sent, a second after the first call
// and then at most once a second.
func (p *ProgressLine) Sent(n int) {
	if p.last.IsZero() {
		p.last = time.Now()
	} else if time.Since(p.last) >= time.Second {
		p.last, p.shown = time.Now(), true
		fmt.Fprintf(p.W, "\rsimulate: %d messages sent", n)
	}
}

// Write ends the progress line and writes b to Out.
func (p *ProgressLine) Write(b []byte) (int, error) {
	p.End()
	return p.Out.Write(b)
}

// End ends the progress line, if one is shown.
func (p *ProgressLine) End() {
	if p.shown {
		fmt.Fprintln(p.W)
		p.shown = false
	}
}
