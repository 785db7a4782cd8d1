package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/internal/buildinfo"
)

// versionCmd prints which build this is: stb's version and commit, the Go
// release and the librdkafka linked in. The same version, revision and Go
// release are on /metrics as stb_build_info.
func versionCmd(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: stb version\n\nPrint stb's version, the commit it was built from, the Go release that built it and the librdkafka it links.\n")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s (stb version takes none)", strings.Join(fs.Args(), " "))
	}
	_, rdkafka := kafka.LibraryVersion()
	return writeVersion(os.Stdout, buildinfo.Get(), rdkafka)
}

// writeVersion writes the build information, one "name: value" per line
// after the first, for people and for grep.
func writeVersion(w io.Writer, info buildinfo.Info, librdkafka string) error {
	_, err := fmt.Fprintf(w, "stb %s\n  revision:   %s\n  go:         %s\n  librdkafka: %s\n",
		info.Version, info.Revision, info.GoVersion, librdkafka)
	return err
}
