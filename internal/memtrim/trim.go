// Package memtrim hands freed memory back to the operating system: the Go
// heap's and the C heap's, where librdkafka keeps the buffers of the
// messages it fetched. glibc keeps freed memory mapped until malloc_trim,
// and the Go runtime returns it only slowly, so without this a process that
// once held a large backlog keeps its resident size long after.
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
