// Package memtrim hands freed memory back to the operating system: the Go
// heap's and the C heap's, where librdkafka keeps the buffers of the
// messages it fetched. glibc keeps freed memory mapped until malloc_trim,
// and the Go runtime returns it only slowly, so without this a process that
// once held a large backlog keeps its resident size long after.
//
// Two builds: the default links glibc (trim_glibc.go: malloc_trim and
// mallinfo2); the build tag musl, used for the static binary of the
// container image (`make image`, with musl-gcc and confluent-kafka-go's
// musl librdkafka), has neither, so there Release frees only the Go heap
// and CHeap reports nothing (trim_musl.go). musl's allocator unmaps large
// freed chunks by itself, which is what malloc_trim is for under glibc.
package memtrim
