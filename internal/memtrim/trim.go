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
