package sim

import "testing"

// TestEventRun: the run an event name carries reads back, and a name
// EventName did not make (as earlier versions of the simulator named
// events) has none; Expected records the run's first incarnation, also
// through its file.
func TestEventRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  uint64
		ok   bool
	}{
		{EventName("policy-001", 100, 7), 100, true},
		{EventName("policy-001", 1<<63+5, 0x1234abcd), 1<<63 + 5, true},
		{"policy-001.00000007", 0, false},
		{"policy-001.x.00000007", 0, false},
		{"policy-001.5.0000007", 0, false},
		{"", 0, false},
	} {
		if run, ok := EventRun(tc.name); run != tc.run || ok != tc.ok {
			t.Errorf("EventRun(%q) = %d, %v; want %d, %v", tc.name, run, ok, tc.run, tc.ok)
		}
	}

	exp, _ := run(t, Config{Hubs: 1, Clusters: 2, Generations: 2, Seed: 3, FirstIncarnation: 42})
	data, err := exp.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeExpected(data)
	if err != nil {
		t.Fatal(err)
	}
	if exp.FirstIncarnation != 42 || back.FirstIncarnation != 42 {
		t.Fatalf("FirstIncarnation %d, %d through the file; want 42", exp.FirstIncarnation, back.FirstIncarnation)
	}
	for _, byCluster := range exp.Hubs["hub-001"].Events {
		for _, names := range byCluster {
			for _, name := range names {
				if run, ok := EventRun(name); !ok || run != 42 {
					t.Fatalf("event %s: run %d (%v), want 42", name, run, ok)
				}
			}
		}
	}
}
