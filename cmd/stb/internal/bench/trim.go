package bench

// #include <malloc.h>
import "C"

import "runtime/debug"

// releaseMemory hands back to the OS what earlier variants left: the Go
// heap (debug.FreeOSMemory) and the C heap, where librdkafka's consumers
// of the ceilings kept their buffers; glibc keeps freed memory mapped
// until malloc_trim. Without it a variant's peak RSS counts the ceilings'
// leftovers as its own.
func releaseMemory() {
	debug.FreeOSMemory()
	C.malloc_trim(0)
}
