package committer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the store needs: *pgxpool.Pool and pgx.Tx both have it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// PGStore keeps positions in the global hub's status.transport, one row
// per partition named "<topic>@<partition>" with payload
// {"partition","offset","ownerIdentity"}: the rows upstream's manager
// reads and writes (manager/pkg/status/conflator/conflation_committer.go,
// pkg/transport/consumer/generic_consumer.go), so that either can resume
// from the other's positions. The guard is STB's own, in
// stb.partition_owners (README "Scaling out"): Claim claims a partition
// for this store, and Save only moves positions of partitions this store
// still holds, so a replica that lost a partition to another cannot move
// the position the new owner resumes from.
type PGStore struct {
	db    DB
	owner string

	mu     sync.Mutex
	epochs map[string]int64 // row name → epoch of this store's claim
}

// NewPGStore returns a store on db that claims rows as owner, which must
// be unique among the bridges sharing the database (cmd/stb uses host
// name, process id and a random suffix). Give it a pool of its own so
// commits never wait behind the workers.
func NewPGStore(db DB, owner string) *PGStore {
	return &PGStore{db: db, owner: owner, epochs: map[string]int64{}}
}

// RowName is the status.transport name of a partition.
func RowName(topic string, partition int32) string {
	return topic + "@" + strconv.FormatInt(int64(partition), 10)
}

// storedPosition is a status.transport payload as upstream's manager
// writes it (pkg/transport's EventPosition: the topic is the row's name,
// not a member). ownerIdentity is the Kafka cluster the offset belongs
// to: upstream's built-in Kafka's cluster id, and the one STB writes.
type storedPosition struct {
	Partition     int32  `json:"partition"`
	Offset        int64  `json:"offset"`
	OwnerIdentity string `json:"ownerIdentity"`
}

// LostError is returned by Save for positions it did not store because
// another owner has claimed their partitions since this store did. The
// other positions were stored.
type LostError struct {
	// Lost are the positions not stored.
	Lost []Position
}

func (e *LostError) Error() string {
	names := make([]string, len(e.Lost))
	for i, p := range e.Lost {
		names[i] = RowName(p.Topic, p.Partition)
	}
	return fmt.Sprintf("partitions claimed by another bridge, positions not stored: %s", strings.Join(names, ", "))
}

// claimSQL makes this store the owner of a partition and returns the
// position stored for it (NULL for none) and the new epoch.
const claimSQL = `
WITH claim AS (
	INSERT INTO stb.partition_owners AS o (name, owner, epoch, claimed_at)
	VALUES ($1, $2, 1, now())
	ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, epoch = o.epoch + 1, claimed_at = now()
	RETURNING o.epoch
)
SELECT (SELECT payload FROM status.transport WHERE name = $1), epoch FROM claim`

// Claim claims the partition for this store and returns its stored position;
// ok is false when none is stored. The reader calls it when Kafka assigns
// the partition, so the claim goes to the bridge that reads it now. The
// position's ClusterID is the row's ownerIdentity, whoever wrote it.
func (s *PGStore) Claim(ctx context.Context, topic string, partition int32) (p Position, ok bool, err error) {
	name := RowName(topic, partition)
	raw, err := s.claim(ctx, name)
	if err != nil || raw == nil {
		return Position{}, false, err
	}
	var sp storedPosition
	if err := json.Unmarshal(raw, &sp); err != nil {
		return Position{}, false, fmt.Errorf("decode position of %s: %w", name, err)
	}
	return Position{Topic: topic, Partition: partition, Offset: sp.Offset, ClusterID: sp.OwnerIdentity}, true, nil
}

// claim makes this store the owner of a row, records the epoch of the
// claim, and returns the position stored so far (nil for none).
func (s *PGStore) claim(ctx context.Context, name string) (payload []byte, err error) {
	var epoch int64
	if err := s.db.QueryRow(ctx, claimSQL, name, s.owner).Scan(&payload, &epoch); err != nil {
		return nil, fmt.Errorf("claim partition %s: %w", name, err)
	}
	s.mu.Lock()
	s.epochs[name] = epoch
	s.mu.Unlock()
	return payload, nil
}

// saveSQL stores the positions of the partitions this store holds: a
// position is written only while the partition's owner and epoch are the
// ones this store claimed it with (the owner rows are locked, in name
// order, until the statement's transaction ends, so a claim cannot slip in
// between). It returns the names of the rows it wrote. updated_at is UTC,
// as the manager's are.
const saveSQL = `
INSERT INTO status.transport AS t (name, payload, created_at, updated_at)
SELECT s.n, s.p::jsonb, now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC'
FROM unnest($1::text[], $2::text[], $4::bigint[]) AS s(n, p, e)
JOIN stb.partition_owners AS o ON o.name = s.n AND o.owner = $3 AND o.epoch = s.e
ORDER BY s.n
FOR SHARE OF o
ON CONFLICT (name) DO UPDATE SET payload = excluded.payload, updated_at = excluded.updated_at
RETURNING t.name`

// Save stores the positions in one statement. Positions of partitions
// another owner has claimed since are not stored; they come back in a
// *LostError, after the others were stored.
func (s *PGStore) Save(ctx context.Context, ps []Position) error {
	names := make([]string, len(ps))
	payloads := make([]string, len(ps))
	epochs := make([]int64, len(ps))
	for i, p := range ps {
		b, err := json.Marshal(storedPosition{Partition: p.Partition, Offset: p.Offset, OwnerIdentity: p.ClusterID})
		if err != nil {
			return err
		}
		names[i] = RowName(p.Topic, p.Partition)
		payloads[i] = string(b)
		epoch, err := s.epoch(ctx, names[i])
		if err != nil {
			return err
		}
		epochs[i] = epoch
	}
	rows, err := s.db.Query(ctx, saveSQL, names, payloads, s.owner, epochs)
	if err != nil {
		return fmt.Errorf("save positions: %w", err)
	}
	written, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("save positions: %w", err)
	}
	if len(written) == len(ps) {
		return nil
	}
	var lost []Position
	for i, p := range ps {
		if !slices.Contains(written, names[i]) {
			lost = append(lost, p)
		}
	}
	return &LostError{Lost: lost}
}

// epoch returns the epoch of this store's claim on a row, claiming it now
// if Claim did not (its claim failed when the partition was assigned).
func (s *PGStore) epoch(ctx context.Context, name string) (int64, error) {
	s.mu.Lock()
	epoch, ok := s.epochs[name]
	s.mu.Unlock()
	if ok {
		return epoch, nil
	}
	if _, err := s.claim(ctx, name); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epochs[name], nil
}
