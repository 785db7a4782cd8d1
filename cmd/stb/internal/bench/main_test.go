package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// produceEnv, set to 1, makes this test binary a producer process: the
// tests of producer.go start it where `stb bench` starts `stb bench
// produce` (testProduceCmd).
const produceEnv = "STB_BENCH_TEST_PRODUCE"

func TestMain(m *testing.M) {
	if os.Getenv(produceEnv) == "1" {
		if err := RunProducer(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testProduceCmd returns the command line of a producer process for tests:
// this test binary, as a producer for the children of t.
func testProduceCmd(t *testing.T) []string {
	t.Helper()
	t.Setenv(produceEnv, "1")
	return []string{os.Args[0]}
}
