package transport_test

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stbridge/stb/pkg/transport"
)

// fetchWaits is what the reader's fetch requests asked the broker to wait
// for, as the broker received them.
type fetchWaits struct {
	mu       sync.Mutex
	maxWait  int32
	minBytes int32
	seen     bool
}

func (f *fetchWaits) get() (maxWait, minBytes int32, seen bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxWait, f.minBytes, f.seen
}

// startFetchRecorder starts a broker of its own, of one topic "status",
// that records the waits of the fetch requests of a partition and passes
// every request on unchanged.
func startFetchRecorder(t *testing.T) (addr string, waits *fetchWaits) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("cluster-fetch"), kfake.SeedTopics(1, "status"))
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(c.Close)
	waits = &fetchWaits{}
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.FetchRequest)
		if len(r.Topics) > 0 { // the only topic; newer fetches name it by id
			waits.mu.Lock()
			waits.maxWait, waits.minBytes, waits.seen = r.MaxWaitMillis, r.MinBytes, true
			waits.mu.Unlock()
		}
		return nil, nil, false
	})
	return c.ListenAddrs()[0], waits
}

// TestFetchWaitsForABatch: a reader's fetches ask the broker to wait up to
// 25 ms for 64 KiB (defaultProperties), so that live traffic is read in
// batches rather than one fetch per producer batch, and Properties can
// ask for other waits. Without the defaults librdkafka asks for 1 byte
// and up to 500 ms: the broker answers as soon as anything arrives.
func TestFetchWaitsForABatch(t *testing.T) {
	for _, tc := range []struct {
		name          string
		props         map[string]string
		wait, minimum int32
	}{
		{"defaults", nil, 25, 64 << 10},
		{"overridden", map[string]string{"fetch.wait.max.ms": "5", "fetch.min.bytes": "1"}, 5, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, waits := startFetchRecorder(t)
			startReaderConfig(t, nil, "fetch-"+tc.name, &memOffsets{}, &testSink{release: true}, &memStore{}, func(c *transport.Config) {
				c.Brokers = addr
				c.Properties = tc.props
			})
			deadline := time.Now().Add(waitTimeout)
			for {
				if wait, minimum, seen := waits.get(); seen {
					if wait != tc.wait || minimum != tc.minimum {
						t.Errorf("fetch asked to wait %d ms for %d bytes, want %d ms for %d", wait, minimum, tc.wait, tc.minimum)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("no fetch of the topic reached the broker")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
