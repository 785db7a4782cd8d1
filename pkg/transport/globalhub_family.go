package transport

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/pkg/bundle"
)

// GlobalHubFamily is the global-hub profile's name (GlobalHub.Name), the
// name --profiles turns it on by.
const GlobalHubFamily = "globalhub"

// The global-hub profile as a Family: a MessageDecoder (Decode), an
// Assembler of the agent's chunked events (globalhub_chunks.go) and
// Stateful (its runs, globalhub_runs.go).
var (
	_ MessageDecoder = (*GlobalHub)(nil)
	_ Assembler      = (*GlobalHub)(nil)
	_ Stateful       = (*GlobalHub)(nil)
)

// Name implements Family.
func (g *GlobalHub) Name() string { return GlobalHubFamily }

// Owns implements Family: every type under GlobalHubEventTypePrefix.
func (g *GlobalHub) Owns(typ string) bool { return strings.HasPrefix(typ, GlobalHubEventTypePrefix) }

// Claims implements MessageDecoder: a binary-mode type under
// GlobalHubEventTypePrefix, or no type header (structured mode).
func (g *GlobalHub) Claims(msg *kafka.Message) bool { return globalHubCandidate(msg) }

// DecodeMessage implements MessageDecoder; it is Decode.
func (g *GlobalHub) DecodeMessage(msg *kafka.Message, rules Rules, receivedAt time.Time) (*bundle.Bundle, *Reject) {
	return g.Decode(msg, rules, receivedAt)
}

// MayChunk implements Assembler.
func (g *GlobalHub) MayChunk(msg *kafka.Message, open bool) bool { return mayChunk(msg, open) }

// MaxEventBytes implements Assembler: GlobalHubMaxBundleBytes.
func (g *GlobalHub) MaxEventBytes(configured int) int { return GlobalHubMaxBundleBytes(configured) }

// ChunkLetter implements Assembler: the source is the hub, and the bundle
// type is the event type's behind bundle.GlobalHubPrefix.
func (g *GlobalHub) ChunkLetter(source, typ string) (hub, bundleType string) {
	return source, bundle.GlobalHubPrefix + strings.TrimPrefix(typ, GlobalHubEventTypePrefix)
}

// ghState is the profile's state of one hub's type as it is stored
// (db.StoredVersion.FamilyState, a JSON object): the ids of the events
// that started the agent's latest runs, oldest first (as StorableRunID
// keeps them), and the hashed ids (hashID, as int64) of the latest frames
// read at their run's first or newest version, oldest first. The names
// are those of the stb.bundle_versions columns it replaced
// (sql/003_family_state.sql converts them).
type ghState struct {
	RunIDs      []string `json:"run_ids,omitempty"`
	StartFrames []int64  `json:"start_frames,omitempty"`
}

// EncodeGlobalHubState encodes run ids and start frames as the profile
// stores them; tests and tools write stored states with it.
func EncodeGlobalHubState(runIDs []string, startFrames []int64) []byte {
	if len(runIDs) == 0 && len(startFrames) == 0 {
		return nil
	}
	data, err := json.Marshal(ghState{RunIDs: runIDs, StartFrames: startFrames})
	if err != nil {
		panic(err) // strings and integers always encode
	}
	return data
}

// DecodeGlobalHubState decodes a state EncodeGlobalHubState encoded (or
// the profile stored); a state it cannot read has none.
func DecodeGlobalHubState(data []byte) (runIDs []string, startFrames []int64) {
	s := decodeGlobalHubState(data)
	return s.RunIDs, s.StartFrames
}

// decodeGlobalHubState decodes a stored state; a state it cannot read is
// taken for none (the runs are then learnt again, as after a bridge that
// never stored them).
func decodeGlobalHubState(data []byte) ghState {
	var s ghState
	if len(data) > 0 {
		if err := json.Unmarshal(data, &s); err != nil {
			return ghState{}
		}
	}
	return s
}

// Restore implements Stateful: RestoreRuns with the state decoded.
func (g *GlobalHub) Restore(hub, bundleType string, v bundle.Version, at bundle.Origin, state []byte) {
	s := decodeGlobalHubState(state)
	g.RestoreRuns(hub, bundleType, v, at, s.RunIDs, s.StartFrames)
}

// Forget implements Stateful: every run of every type of hub is dropped.
func (g *GlobalHub) Forget(hub string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.runs {
		if k.hub == hub {
			delete(g.runs, k)
		}
	}
}

// Evict implements Stateful: the runs of each evicted hub are kept only
// as the database keeps them (its version, where it was read, the latest
// runs' first ids and the frames stored), as a bridge that starts again
// restores them: the ids read last, the runs' positions and the base's
// history go.
func (g *GlobalHub) Evict(evicted func(hub string) bool) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	asked := map[string]bool{} // evicted's answer per hub
	n := 0
	for k, r := range g.runs {
		if r.compacted {
			continue
		}
		out, ok := asked[k.hub]
		if !ok {
			out = evicted(k.hub)
			asked[k.hub] = out
			if out {
				n++
			}
		}
		if !out {
			continue
		}
		delete(g.runs, k)
		if !r.hasLatest || r.run == 0 {
			continue
		}
		at := bundle.Origin{Partition: -1, Offset: -1}
		if r.hasRead {
			at = r.read
		}
		g.restoreLocked(k.hub, k.typ, pack(r.run, r.latest), at, r.storedIDs, r.storedFrames)
		if c := g.runs[k]; c != nil {
			c.compacted = true
		}
	}
	return n
}

// Hubs returns the number of hubs the profile keeps runs of.
func (g *GlobalHub) Hubs() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	hubs := map[string]bool{}
	for k := range g.runs {
		hubs[k.hub] = true
	}
	return len(hubs)
}

// GlobalHubBundleTypes returns the bundle types the profile makes
// ("globalhub.managedcluster"), each with the type its dependency names
// ("" for none), as the type table (globalhub.Types) made them: what the
// registry's syncers of the profile must be (dbsyncers.GlobalHub), which a
// test holds them to.
func GlobalHubBundleTypes() map[string]string {
	out := make(map[string]string, len(ghTypes))
	for short, t := range ghTypes {
		dep := ""
		if t.dependsOn != "" {
			dep = bundle.GlobalHubPrefix + t.dependsOn
		}
		out[bundle.GlobalHubPrefix+short] = dep
	}
	return out
}
