package sim

import (
	"bytes"
	"slices"
)

// The generic bundle (pkg/bundle/generic/generic_bundle.go @9c09571): a
// JSON object of the members below, each an array, an empty one left out
// (omitempty). The ObjectEmitter never fills create (it never calls
// AddCreate), so the simulator has no such member.
const (
	memberUpdate = iota
	memberDelete
	memberResync
	memberResyncMetadata
	memberCount
)

var memberNames = [memberCount]string{"update", "delete", "resync", "resync_metadata"}

// genericBundle is the frame an object emitter is filling: its members as
// encoded items, in the order added, and the length of its JSON, kept as
// items come and go so that a full frame is seen without encoding it.
type genericBundle struct {
	items [memberCount][][]byte
	// keys name the items of update and delete ("ns/name").
	keys [memberCount][]string
	size int // of encode(); 0 while empty
}

func (b *genericBundle) empty() bool { return b.size == 0 }

// sizeWith returns the length of the JSON with item added to member m.
func (b *genericBundle) sizeWith(m int, item []byte) int {
	s := b.size
	switch {
	case s == 0:
		s = len(`{"":[]}`) + len(memberNames[m])
	case len(b.items[m]) == 0:
		s += len(`,"":[]`) + len(memberNames[m])
	default:
		s++ // the comma before the item
	}
	return s + len(item)
}

func (b *genericBundle) add(m int, key string, item []byte) {
	b.size = b.sizeWith(m, item)
	b.items[m] = append(b.items[m], item)
	b.keys[m] = append(b.keys[m], key)
}

// index returns where key is in member m, or -1.
func (b *genericBundle) index(m int, key string) int { return slices.Index(b.keys[m], key) }

// replace puts item in place of the one at i of member m.
func (b *genericBundle) replace(m, i int, item []byte) {
	b.size += len(item) - len(b.items[m][i])
	b.items[m][i] = item
}

// remove takes the item at i out of member m.
func (b *genericBundle) remove(m, i int) {
	b.items[m] = slices.Delete(b.items[m], i, i+1)
	b.keys[m] = slices.Delete(b.keys[m], i, i+1)
	b.size = 0
	if d := b.encode(); len(d) > 2 {
		b.size = len(d)
	}
}

// has reports whether member m has an item.
func (b *genericBundle) has(m int) bool { return len(b.items[m]) > 0 }

// encode returns the frame's JSON, as json.Marshal of the agent's
// GenericBundle gives it.
func (b *genericBundle) encode() []byte {
	out := bytes.NewBuffer(make([]byte, 0, max(b.size, 2)))
	out.WriteByte('{')
	first := true
	for m, items := range b.items {
		if len(items) == 0 {
			continue
		}
		if !first {
			out.WriteByte(',')
		}
		first = false
		out.WriteString(`"` + memberNames[m] + `":[`)
		out.Write(bytes.Join(items, []byte{','}))
		out.WriteByte(']')
	}
	out.WriteByte('}')
	return out.Bytes()
}

func (b *genericBundle) reset() { *b = genericBundle{} }

// ghObject is one object an object emitter is given: its key, its JSON
// as the emitter's tweak leaves it, and its ObjectMetadata JSON ({"id",
// "ns", "name"}, empty ones left out).
type ghObject struct {
	key        string
	data, meta []byte
}

// ghFrame is one frame an object emitter sends.
type ghFrame struct {
	data    []byte
	version ghVersion
	// changes says the frame holds only updates and deletes: one the
	// simulator may lose (Config.LoseProbability). metadata says it is the
	// resync_metadata frame that ends a resync.
	changes, metadata bool
}

// ghObjectEmitter is the agent's ObjectEmitter of one type
// (agent/pkg/status/emitters/object_emitter.go @bce71d4): it gathers
// updates and deletes in a generic bundle and sends them at every tick,
// and sends every object in resync frames when the periodic syncer asks.
// A frame that would grow past limit is sent first, as it is, with the
// version as it stands.
type ghObjectEmitter struct {
	limit   int
	version ghVersion
	bundle  genericBundle
	// frames are the frames sent since the caller last took them.
	frames []ghFrame
}

func (e *ghObjectEmitter) sendBundle() {
	if e.bundle.empty() {
		return // object_emitter.go sendBundle: an empty bundle is not sent
	}
	metadata := e.bundle.has(memberResyncMetadata)
	changes := !e.bundle.has(memberResync) && !metadata
	e.frames = append(e.frames, ghFrame{data: e.bundle.encode(), version: e.version, changes: changes, metadata: metadata})
	e.bundle.reset() // cleaned after a successful send
}

// tryAdd adds item to member m, sending the frame first if it would grow
// past the limit. An object too large for a frame of its own is sent
// alone: the newest GenericBundle refuses it, an older one took it with a
// warning (id 17259371462); the simulator keeps its state exact.
func (e *ghObjectEmitter) tryAdd(m int, key string, item []byte) {
	if !e.bundle.empty() && e.bundle.sizeWith(m, item) > e.limit {
		e.sendBundle()
	}
	e.bundle.add(m, key, item)
}

// update is ObjectEmitter.Update: an object already waiting is replaced,
// another one added; either way the value goes up.
func (e *ghObjectEmitter) update(o ghObject) {
	if i := e.bundle.index(memberUpdate, o.key); i >= 0 {
		e.bundle.replace(memberUpdate, i, o.data)
	} else {
		e.tryAdd(memberUpdate, o.key, o.data)
	}
	e.version.incr()
}

// delete is ObjectEmitter.Delete: the object leaves the updates (a
// change), and its metadata joins the deletes unless already there.
func (e *ghObjectEmitter) delete(o ghObject) {
	if i := e.bundle.index(memberUpdate, o.key); i >= 0 {
		e.bundle.remove(memberUpdate, i)
		e.version.incr()
	}
	if e.bundle.index(memberDelete, o.key) >= 0 {
		return
	}
	e.tryAdd(memberDelete, o.key, o.meta)
	e.version.incr()
}

// resync is ObjectEmitter.Resync: every object in resync frames, then one
// resync_metadata frame naming them all, every frame at the version as it
// stands (resync neither increments nor moves to the next generation).
// The bundle is shared: updates and deletes still waiting go out in the
// first frame. The metadata is never split: AddResyncMetadata refuses a
// frame over the limit, which would leave the bridge's deletions undone,
// so the simulator sends it whatever its size. Nothing at all is sent for
// no objects (periodic_syncer.go: "No objects found").
func (e *ghObjectEmitter) resync(objs []ghObject) {
	if len(objs) == 0 {
		return
	}
	for _, o := range objs {
		e.tryAdd(memberResync, o.key, o.data)
	}
	e.sendBundle()
	for _, o := range objs {
		e.bundle.add(memberResyncMetadata, o.key, o.meta)
	}
	e.sendBundle()
}

// send is ObjectEmitter.Send, at every tick: what waits is sent, and the
// generation moves on whether or not anything was.
func (e *ghObjectEmitter) send() {
	e.sendBundle()
	e.version.next()
}

// take returns the frames sent since the last call.
func (e *ghObjectEmitter) take() []ghFrame {
	f := e.frames
	e.frames = nil
	return f
}
