// Command stamped prints the build information of its own binary, for
// TestMakefileStamps: built with the Makefile's -ldflags, it must print the
// version and revision given there.
package main

import (
	"fmt"

	"github.com/stbridge/stb/internal/buildinfo"
)

func main() {
	info := buildinfo.Get()
	fmt.Println(info.Version, info.Revision)
}
