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
