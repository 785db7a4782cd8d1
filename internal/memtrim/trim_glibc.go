//go:build !musl

package memtrim

// #include <malloc.h>
import "C"

import "runtime/debug"

// Release runs a full garbage collection, returns the freed Go heap and
// trims the C heap. It takes a moment (a collection of the whole heap):
// call it after the memory was freed, not on a hot path.
func Release() {
	debug.FreeOSMemory()
	C.malloc_trim(0)
}

// CHeap returns the C heap's bytes in use (glibc's mallinfo2: chunks
// allocated from its arenas and by mmap) and the bytes its arenas hold
// mapped, in use or free. librdkafka is the process's only large C user.
func CHeap() (inUse, arenas int64) {
	mi := C.mallinfo2()
	return int64(mi.uordblks) + int64(mi.hblkhd), int64(mi.arena) + int64(mi.hblkhd)
}
