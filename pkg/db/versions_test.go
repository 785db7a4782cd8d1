package db_test

import (
	"math"
	"reflect"
	"strconv"
	"testing"

	"github.com/stbridge/stb/pkg/bundle"
	"github.com/stbridge/stb/pkg/db"
	"github.com/stbridge/stb/pkg/db/dbtest"
)

func TestLoadVersions(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.New(t)
	ctx := t.Context()

	stored := []db.StoredVersion{
		{Hub: "hub-a", Type: "globalhub.managedcluster", Version: bundle.Version{Incarnation: 3<<32 | 7, Generation: 9},
			Origin: bundle.Origin{Topic: "gh-status.hub-a", Partition: 0, Offset: 41}, FamilyState: []byte(`{"run_ids": ["run-1", "run-2"], "start_frames": [-7, 42]}`)},
		{Hub: "hub-a", Type: "heartbeat", Version: bundle.Version{Incarnation: 1, Generation: 2},
			Origin: bundle.Origin{Topic: "status", Partition: 3, Offset: 12}},
		{Hub: "hub-a", Type: "managedclusters", Version: bundle.Version{Incarnation: math.MaxUint64, Generation: math.MaxUint64},
			Origin: bundle.Origin{Partition: -1, Offset: -1}},
		{Hub: "hub-b", Type: "managedclusters", Version: bundle.Version{Incarnation: 0, Generation: 1 << 63},
			Origin: bundle.Origin{Partition: -1, Offset: -1}},
	}
	for _, sv := range stored {
		if _, err := pool.Exec(ctx, `
			INSERT INTO stb.bundle_versions (hub, bundle_type, incarnation, generation, topic, "partition", "offset", family_state)
			VALUES ($1, $2, $3::text::numeric, $4::text::numeric, $5, $6, $7, $8::jsonb)`,
			sv.Hub, sv.Type, strconv.FormatUint(sv.Version.Incarnation, 10),
			strconv.FormatUint(sv.Version.Generation, 10),
			sv.Origin.Topic, sv.Origin.Partition, sv.Origin.Offset, sv.FamilyState); err != nil {
			t.Fatal(err)
		}
	}

	got, err := db.LoadVersions(ctx, pool)
	if err != nil {
		t.Fatalf("LoadVersions: %v", err)
	}
	if !reflect.DeepEqual(got, stored) {
		t.Fatalf("LoadVersions = %+v, want %+v", got, stored)
	}

	got, err = db.LoadHubVersions(ctx, pool, "hub-a")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, stored[:3]) {
		t.Fatalf("LoadHubVersions(hub-a) = %+v, want %+v", got, stored[:3])
	}
	if got, err = db.LoadHubVersions(ctx, pool, "no-such-hub"); err != nil || len(got) != 0 {
		t.Fatalf("LoadHubVersions(no-such-hub) = %+v, %v; want none", got, err)
	}

	// hub-a has a row read from status/3 (and others elsewhere), hub-b
	// none: assigning status/3 refreshes all of hub-a and nothing of hub-b.
	for _, tc := range []struct {
		name       string
		topics     []string
		partitions []int32
		want       []db.StoredVersion
	}{
		{"the hub's partition", []string{"status"}, []int32{3}, stored[:3]},
		{"its per-hub topic", []string{"other", "gh-status.hub-a"}, []int32{3, 0}, stored[:3]},
		{"another partition", []string{"status"}, []int32{4}, nil},
		{"none", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := db.PartitionVersions(ctx, pool, tc.topics, tc.partitions)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && !reflect.DeepEqual(got, tc.want)) {
				t.Fatalf("PartitionVersions(%v, %v) = %+v, want %+v", tc.topics, tc.partitions, got, tc.want)
			}
		})
	}
}
