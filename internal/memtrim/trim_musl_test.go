//go:build musl

package memtrim

import "testing"

// TestCHeapMusl: the musl build measures no C heap and says so with zeros,
// not numbers that look measured; Release still runs.
func TestCHeapMusl(t *testing.T) {
	Release()
	if inUse, arenas := CHeap(); inUse != 0 || arenas != 0 {
		t.Errorf("CHeap() = %d, %d under musl, want 0, 0", inUse, arenas)
	}
}
