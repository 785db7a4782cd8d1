//go:build musl

package memtrim

import "runtime/debug"

// Release runs a full garbage collection and returns the freed Go heap.
// musl has no malloc_trim; its allocator gives large freed chunks back to
// the system itself. It takes a moment (a collection of the whole heap):
// call it after the memory was freed, not on a hot path.
func Release() {
	debug.FreeOSMemory()
}

// CHeap returns 0, 0: musl has no mallinfo to ask, so the C heap is not
// measured in this build (`stb bench` shows it as 0).
func CHeap() (inUse, arenas int64) {
	return 0, 0
}
