package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/stbridge/stb/pkg/bundle"
)

// Expected is the state the database must hold once the bridge has written
// everything a run sent, and what the run sent. It is the contract between
// `stb simulate` and `stb verify`.
type Expected struct {
	// Seed, Topic and Generations echo the run's configuration, so that a
	// file says how it was made.
	Seed        int64  `json:"seed"`
	Topic       string `json:"topic"`
	Generations int    `json:"generations"`
	// Messages is the number of messages sent; MessagesByType splits it by
	// bundle type.
	Messages       int            `json:"messages"`
	MessagesByType map[string]int `json:"messagesByType"`
	// Restarts is the number of agent restarts over all hubs.
	Restarts int `json:"restarts"`
	// Hubs maps every hub's name to its final state.
	Hubs map[string]*HubState `json:"hubs"`
}

// HubState is the final state of one hub.
type HubState struct {
	// Versions maps each bundle type to the version of the last bundle of
	// that type the hub sent: what status.bundle_versions must hold.
	Versions map[string]bundle.Version
	// Heartbeat says whether the hub sent a heartbeat, so that
	// status.hub_heartbeats must have its row.
	Heartbeat bool
	// ManagedClusters maps cluster names to the clusters of the hub's last
	// managedclusters snapshot: status.managed_clusters must hold exactly
	// these.
	ManagedClusters map[string]Cluster
	// Restarts is the number of times the hub's agent restarted.
	Restarts int
}

// Cluster is a managed cluster as the database must hold it: its id and
// the labels of its payload.
type Cluster struct {
	UID    string            `json:"uid"`
	Labels map[string]string `json:"labels"`
}

// hubStateJSON is the file form of HubState: versions in their wire form
// ("<incarnation>.<generation>"), which reads like the bridge's logs.
type hubStateJSON struct {
	Versions        map[string]string  `json:"versions"`
	Heartbeat       bool               `json:"heartbeat"`
	ManagedClusters map[string]Cluster `json:"managedClusters"`
	Restarts        int                `json:"restarts"`
}

// MarshalJSON writes versions in their wire form.
func (h HubState) MarshalJSON() ([]byte, error) {
	out := hubStateJSON{
		Versions:        make(map[string]string, len(h.Versions)),
		Heartbeat:       h.Heartbeat,
		ManagedClusters: h.ManagedClusters,
		Restarts:        h.Restarts,
	}
	if out.ManagedClusters == nil {
		out.ManagedClusters = map[string]Cluster{}
	}
	for t, v := range h.Versions {
		out.Versions[t] = v.String()
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (h *HubState) UnmarshalJSON(data []byte) error {
	var in hubStateJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	versions := make(map[string]bundle.Version, len(in.Versions))
	for t, s := range in.Versions {
		v, err := bundle.ParseVersion(s)
		if err != nil {
			return fmt.Errorf("version of %s: %w", t, err)
		}
		versions[t] = v
	}
	clusters := in.ManagedClusters
	if clusters == nil {
		clusters = map[string]Cluster{}
	}
	*h = HubState{Versions: versions, Heartbeat: in.Heartbeat, ManagedClusters: clusters, Restarts: in.Restarts}
	return nil
}

// HubNames returns the names of the expected hubs, sorted.
func (e *Expected) HubNames() []string {
	names := make([]string, 0, len(e.Hubs))
	for name := range e.Hubs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Clusters returns the number of managed clusters over all hubs.
func (e *Expected) Clusters() int {
	n := 0
	for _, h := range e.Hubs {
		n += len(h.ManagedClusters)
	}
	return n
}

// Encode returns e as indented JSON. The output is stable: maps are
// written with sorted keys, so equal states give equal files.
func (e *Expected) Encode() ([]byte, error) {
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode expected state: %w", err)
	}
	return append(data, '\n'), nil
}

// WriteFile writes e to path as indented JSON. It writes a temporary file
// beside path and renames it, so that path never holds half a state.
func (e *Expected) WriteFile(path string) (err error) {
	data, err := e.Encode()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write expected state: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()           // already failed; the first error is the one to report
			_ = os.Remove(f.Name()) // best effort: do not leave the temporary file behind
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write expected state to %s: %w", f.Name(), err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write expected state to %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write expected state to %s: %w", f.Name(), err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write expected state: %w", err)
	}
	return nil
}

// ReadExpected reads a file WriteFile wrote.
func ReadExpected(path string) (*Expected, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read expected state: %w", err)
	}
	e, err := DecodeExpected(data)
	if err != nil {
		return nil, fmt.Errorf("read expected state from %s: %w", path, err)
	}
	return e, nil
}

// DecodeExpected decodes what Encode returns.
func DecodeExpected(data []byte) (*Expected, error) {
	var e Expected
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("decode expected state: %w", err)
	}
	if e.Hubs == nil {
		return nil, errors.New(`decode expected state: "hubs" is missing`)
	}
	for name, h := range e.Hubs {
		if h == nil {
			return nil, fmt.Errorf("decode expected state: hub %q is null", name)
		}
	}
	if e.MessagesByType == nil {
		e.MessagesByType = map[string]int{}
	}
	return &e, nil
}
