package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/stbridge/stb/internal/buildinfo"
)

func TestWriteVersion(t *testing.T) {
	var b bytes.Buffer
	if err := writeVersion(&b, buildinfo.Info{Version: "v1.2.3", Revision: "feedbee-dirty", GoVersion: "go1.26.8"}, "2.12.1"); err != nil {
		t.Fatal(err)
	}
	want := "stb v1.2.3\n  revision:   feedbee-dirty\n  go:         go1.26.8\n  librdkafka: 2.12.1\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestVersionCmd: the command takes no arguments and says so; --help is
// flag.ErrHelp (main exits 0 on it); the librdkafka it reports is the one
// linked in, a dotted version.
func TestVersionCmd(t *testing.T) {
	if err := versionCmd(t.Context(), []string{"extra"}); err == nil || !strings.Contains(err.Error(), "stb version takes none") {
		t.Errorf("versionCmd(extra) = %v, want an error saying it takes no arguments", err)
	}
	if err := versionCmd(t.Context(), []string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("versionCmd(--help) = %v, want flag.ErrHelp", err)
	}
	if err := versionCmd(t.Context(), nil); err != nil {
		t.Errorf("versionCmd() = %v", err)
	}
	if _, v := kafka.LibraryVersion(); strings.Count(v, ".") < 2 {
		t.Errorf("librdkafka version %q, want major.minor.patch", v)
	}
}
