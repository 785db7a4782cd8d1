package bench

import "github.com/stbridge/stb/internal/memtrim"

// releaseMemory hands back to the OS what earlier variants left: the Go
// heap and the C heap, where librdkafka's consumers of the ceilings kept
// their buffers. Without it a variant's peak RSS counts the ceilings'
// leftovers as its own.
func releaseMemory() { memtrim.Release() }
