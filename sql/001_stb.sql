-- STB's own tables, in a schema of their own (stb) so that no name can
-- collide with the global hub's (status, event, local_spec, local_status,
-- history, security: 002_globalhub.sql). What lives here is what no
-- global-hub component reads: the version fence, who owns which
-- partition's position, dead letters, hub lifecycle, STB's own wire
-- format's tables and the families' tables (the work family keeps its
-- schema, work).
-- Versions are unsigned 64-bit on the wire, so they are numeric(20,0) here.

CREATE SCHEMA stb;

-- Every hub the bridge has heard from, and where it is in its lifecycle
-- (README "Hub lifecycle"): active while it sends, inactive once no
-- heartbeat of it was received for --hub-inactive-after, deleted after
-- `stb hub delete` (or --hub-delete-after): its rows are gone and its
-- stb.bundle_versions rows are tombstones, at the hub's newest incarnation
-- and the largest generation, so that no bundle of that incarnation still
-- in Kafka can bring it back. state_since is when it entered its state.
CREATE TABLE stb.hubs (
    name        text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    state       text NOT NULL DEFAULT 'active'
        CHECK (state IN ('active', 'inactive', 'deleted')),
    state_since timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX hubs_state_idx ON stb.hubs (state, state_since);

-- Deletes and resets, as requested: the durable record the running bridges
-- read (they are also told with NOTIFY stb_hub_requests, the id as
-- payload) to drop what they hold of the hub. removed counts the rows the
-- request's transaction deleted; tombstone is the incarnation of the
-- tombstones a delete left (NULL for a reset).
CREATE TABLE stb.hub_requests (
    id           bigserial PRIMARY KEY,
    hub          text NOT NULL,
    action       text NOT NULL CHECK (action IN ('delete', 'reset')),
    requested_by text NOT NULL DEFAULT '',
    removed      bigint NOT NULL DEFAULT 0,
    tombstone    numeric(20,0),
    requested_at timestamptz NOT NULL DEFAULT now()
);

-- The version of the last bundle applied per hub and type. It is written in
-- the same transaction as the bundle's data and is the fence that keeps a
-- replayed or reordered older bundle from writing anything.
--
-- run_ids: the CloudEvents ids of the events that started the latest runs
-- of the global-hub agent for this (hub, type), oldest first, at most four.
-- A run starts at an event older than the newest one read whose id was
-- never read; an id listed here is a copy of an earlier run's first event,
-- never a new run (a late copy of a generation-0 event must not take the
-- database back). start_frames: FNV-1a 64-bit hashes of the ids of the
-- events written at their run's first version other than the run's first
-- event: the frames of the resync an agent sends when it starts, the
-- latest 64, oldest first. Both empty for STB's own types (README "The
-- global-hub agent's events").
CREATE TABLE stb.bundle_versions (
    hub          text NOT NULL,
    bundle_type  text NOT NULL,
    incarnation  numeric(20,0) NOT NULL,
    generation   numeric(20,0) NOT NULL,
    topic        text NOT NULL DEFAULT '',
    "partition"  integer NOT NULL DEFAULT -1,
    "offset"     bigint NOT NULL DEFAULT -1,
    applied_at   timestamptz NOT NULL DEFAULT now(),
    run_ids      text[] NOT NULL DEFAULT '{}',
    start_frames bigint[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (hub, bundle_type)
);
-- A partition's hubs: an assignment restores only the hubs with a version
-- read from one of the partitions assigned (db.PartitionVersions, inside
-- the rebalance callback's deadline), which without this index scans every
-- hub's rows.
CREATE INDEX bundle_versions_topic_partition ON stb.bundle_versions (topic, "partition");

-- Who may move each partition's stored position (README "Scaling out").
-- The positions themselves are the global hub's status.transport rows,
-- shared with upstream's manager; the guard is STB's. A bridge claims a
-- partition (name '<topic>@<partition>') when Kafka assigns it: it writes
-- its owner id and raises epoch by one. Its commits then only move the
-- position while owner and epoch are still its own, so a replica that has
-- lost the partition to another, and has not noticed yet, can no longer
-- move the position the new owner resumes from.
CREATE TABLE stb.partition_owners (
    name        text PRIMARY KEY,
    owner       text NOT NULL,
    epoch       bigint NOT NULL DEFAULT 1,
    claimed_at  timestamptz NOT NULL DEFAULT now()
);

-- Messages and bundles the bridge could not apply and will not retry.
-- The natural key makes a message read twice (after a rebalance, a crash,
-- or a retry of a batch that was partly stored) dead-lettered once: its
-- origin (topic, partition, offset) and, for letters written after
-- decoding, its hub and type. Read-side rejects have '' for hub and type
-- when they were not read; hub and bundle_type are capped at 512 bytes by
-- the writer, so the key fits a B-tree entry. Inserts use ON CONFLICT DO
-- NOTHING on it.
--
-- replayed_at and replay_outcome: when `stb deadletters replay` last ran
-- for the letter and how it ended. applied: written through the version
-- fence; stale: the database already held as new, nothing written;
-- failed: rejected or refused again, with the new reason and error in the
-- row's reason and error. '' for a letter never replayed.
CREATE TABLE stb.dead_letters (
    id             bigserial PRIMARY KEY,
    hub            text NOT NULL DEFAULT '',
    bundle_type    text NOT NULL DEFAULT '',
    version        text NOT NULL DEFAULT '',
    topic          text NOT NULL DEFAULT '',
    "partition"    integer NOT NULL DEFAULT -1,
    "offset"       bigint NOT NULL DEFAULT -1,
    reason         text NOT NULL,
    error          text NOT NULL DEFAULT '',
    headers        jsonb NOT NULL DEFAULT '{}',
    data           bytea,
    created_at     timestamptz NOT NULL DEFAULT now(),
    replayed_at    timestamptz,
    replay_outcome text NOT NULL DEFAULT ''
        CHECK (replay_outcome IN ('', 'applied', 'stale', 'failed'))
);
CREATE INDEX dead_letters_reason_idx ON stb.dead_letters (reason, created_at);
CREATE INDEX dead_letters_hub_idx ON stb.dead_letters (hub, created_at);
CREATE INDEX dead_letters_created_idx ON stb.dead_letters (created_at);
CREATE UNIQUE INDEX dead_letters_origin_key
    ON stb.dead_letters (topic, "partition", "offset", hub, bundle_type);

-- STB's own wire format (profile stb): the latest heartbeat of each hub.
CREATE TABLE stb.hub_heartbeats (
    hub            text PRIMARY KEY,
    last_timestamp timestamptz NOT NULL,
    received_at    timestamptz NOT NULL DEFAULT now()
);

-- STB's own wire format: the managed clusters each hub reported in its
-- latest managedclusters bundle.
CREATE TABLE stb.managed_clusters (
    hub          text NOT NULL,
    cluster_name text NOT NULL,
    cluster_id   text NOT NULL DEFAULT '',
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hub, cluster_name)
);

-- STB's own wire format: one row per (hub, policy, cluster) the hub's
-- latest clusterspolicies bundle placed; compliance and compliancedelta
-- bundles only change the compliance of rows that exist.
--
-- The primary key serves every statement of the handlers: they all select
-- a hub's rows, by policy, and join on (policy_id, cluster_name). No other
-- index is kept: compliance is the column that changes, and leaving it out
-- of every index lets its updates be HOT (no new index entry) whenever the
-- row's page has room for the new version. A compliance report may change
-- every row of a hub at once, so pages are filled only half: on 135,000
-- rows this made the first report after a placement about 3.5 times and a
-- full rotation about 2 times as fast as fillfactor 100 or 80
-- (BenchmarkComplianceApply), for twice the space of small rows.
CREATE TABLE stb.compliance (
    hub          text NOT NULL,
    policy_id    text NOT NULL,
    cluster_name text NOT NULL,
    compliance   text NOT NULL CHECK (compliance IN ('compliant', 'non_compliant', 'unknown')),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hub, policy_id, cluster_name)
) WITH (fillfactor = 50);

-- STB's own wire format: policy events as hubs reported them. An event is
-- identified by its hub, policy, cluster and name (Kubernetes event names
-- are unique per object), so a replayed bundle inserts nothing twice (ON
-- CONFLICT DO NOTHING on the primary key, the only index the handler
-- needs). created_at is the time the event happened, as the hub reported
-- it, or else the time its bundle was produced; NULL when neither is known.
CREATE TABLE stb.policy_events (
    hub          text NOT NULL,
    policy_id    text NOT NULL,
    cluster_name text NOT NULL,
    event_name   text NOT NULL,
    reason       text NOT NULL DEFAULT '',
    message      text NOT NULL DEFAULT '',
    created_at   timestamptz,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hub, policy_id, cluster_name, event_name)
);

-- The global-hub agent's managedclustermigration reports: what a hub
-- reports of each stage of a managed cluster migration (the migration id
-- and stage come as extensions or in the data), latest per stage; a report
-- with resync set clears the hub's. Upstream's manager keeps these in its
-- memory, not in the database, so they are STB's own.
CREATE TABLE stb.cluster_migrations (
    hub           text NOT NULL,
    migration_id  text NOT NULL,
    stage         text NOT NULL,
    error_message text NOT NULL DEFAULT '',
    payload       jsonb NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hub, migration_id, stage)
);

-- Cloud Native Events (profile cne, dbsyncers/cne): the latest value of
-- every (CloudEvents type, resource address, data type) that nodes
-- publish, as O-RAN consumers keep it (rest-api docs/rest_api_v2.md,
-- CurrentState per ResourceAddress).
--
-- The fence is per row: event_time_ns (the CloudEvents time in
-- nanoseconds since 1970, which timestamptz's microseconds cannot hold),
-- then the Kafka position (topic, partition, offset; dbsyncers/cne
-- Value.After). event_time is the same
-- time for people and queries.
CREATE TABLE stb.cne_state (
	event_type       text        NOT NULL,
	resource_address text        NOT NULL,
	data_type        text        NOT NULL,
	-- hub is the node named by the address's /cluster/node/<node>/ segment:
	-- the family's unit, named hub like every table's, so that
	-- stb hub reset|delete NODE clears its rows as a hub's.
	hub              text        NOT NULL,
	value_type       text        NOT NULL CHECK (value_type IN ('enumeration', 'decimal64.3', 'redfish-event')),
	-- value as sent (a string, a number or an object); value_text its text
	-- (an enumeration, or a decimal64.3 as written, string or number);
	-- value_numeric the decimal64.3 exactly as written.
	value            jsonb       NOT NULL,
	value_text       text,
	value_numeric    numeric,
	event_time       timestamptz NOT NULL,
	event_time_ns    bigint      NOT NULL,
	event_id         text        NOT NULL,
	event_source     text        NOT NULL,
	data_version     text        NOT NULL,
	topic            text        NOT NULL,
	"partition"      integer     NOT NULL,
	"offset"         bigint      NOT NULL,
	updated_at       timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (event_type, resource_address, data_type)
);

-- A node's rows: the console's page of a node, verification, and stb hub
-- reset|delete.
CREATE INDEX cne_state_hub ON stb.cne_state (hub);

-- ManifestWork status (profile work): the latest status of each resource
-- as OCM's work agents report it, one row per (source, resource id), in the
-- shape a Maestro-like source reads: Maestro's resources table keeps a
-- resource's status as the status CloudEvent in JSON (pkg/db/migrations/
-- 202311151850_add_resources.go, Status datatypes.JSON) and its consumer
-- (cluster) name; here the event's data is the status, and its extensions
-- are columns.
--
-- The fence is (resource_version, sequence_id): a status replaces the row
-- only when its pair is strictly greater (dbsyncers/work). A delete is a
-- tombstone (deleted, deleted_at) that keeps its fence, so that a late copy
-- of an older status cannot bring the resource back; a status of a newer
-- pair does (the agent applied the work again).
CREATE SCHEMA work;

CREATE TABLE work.resource_status (
    -- originalsource: the source the work came from.
    source           text NOT NULL,
    -- resourceid: the work's id (its UID on the agent).
    resource_id      text NOT NULL,
    -- clustername: the cluster the agent runs on; never changes for a key.
    cluster          text NOT NULL,
    -- The CloudEvents source of the status: the agent.
    agent            text NOT NULL DEFAULT '',
    -- resourceversion: the spec generation the status belongs to.
    resource_version bigint NOT NULL,
    -- sequenceid: the agent's snowflake id of the status update;
    -- 9223372036854775807 for a delete that carried none.
    sequence_id      bigint NOT NULL,
    -- The event's data, a ManifestBundleStatus ({conditions,
    -- resourceStatus}); NULL when the event had none.
    status           jsonb,
    -- statushash: sha256 of the status, in hex, as the agent computed it;
    -- what a status resync request sends back.
    status_hash      text,
    -- metadata: the work's ObjectMeta as the agent sent it.
    metadata         jsonb,
    event_type       text NOT NULL,
    event_id         text NOT NULL,
    event_time       timestamptz,
    deleted          boolean NOT NULL DEFAULT false,
    deleted_at       timestamptz,
    -- Where the status was read.
    topic            text NOT NULL DEFAULT '',
    "partition"      integer NOT NULL DEFAULT -1,
    "offset"         bigint NOT NULL DEFAULT -1,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, resource_id)
);

-- A cluster's resources: the console's page and the status resync, which
-- reads a cluster's hashes per source.
CREATE INDEX resource_status_cluster ON work.resource_status (cluster, source, resource_id);

---- create above / drop below ----

DROP SCHEMA work CASCADE;
DROP SCHEMA stb CASCADE;
