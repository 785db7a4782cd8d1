-- Initial schema of the status transport bridge.
-- Versions are unsigned 64-bit on the wire, so they are numeric(20,0) here.

CREATE SCHEMA IF NOT EXISTS status;
CREATE SCHEMA IF NOT EXISTS event;

-- Every hub the bridge has heard from.
CREATE TABLE status.hubs (
    name        text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The latest heartbeat of each hub.
CREATE TABLE status.hub_heartbeats (
    hub            text PRIMARY KEY,
    last_timestamp timestamptz NOT NULL,
    received_at    timestamptz NOT NULL DEFAULT now()
);

-- The managed clusters each hub reported in its latest managedclusters bundle.
CREATE TABLE status.managed_clusters (
    hub          text NOT NULL,
    cluster_name text NOT NULL,
    cluster_id   text NOT NULL DEFAULT '',
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hub, cluster_name)
);

-- The version of the last bundle applied per hub and type. It is written in
-- the same transaction as the bundle's data and is the fence that keeps a
-- replayed or reordered older bundle from writing anything.
CREATE TABLE status.bundle_versions (
    hub          text NOT NULL,
    bundle_type  text NOT NULL,
    incarnation  numeric(20,0) NOT NULL,
    generation   numeric(20,0) NOT NULL,
    topic        text NOT NULL DEFAULT '',
    "partition"  integer NOT NULL DEFAULT -1,
    "offset"     bigint NOT NULL DEFAULT -1,
    applied_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hub, bundle_type)
);

-- Committed Kafka positions: name is '<topic>@<partition>', payload is
-- {"topic","partition","offset","clusterId"}.
CREATE TABLE status.transport (
    name        text PRIMARY KEY,
    payload     jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Messages and bundles the bridge could not apply and will not retry.
CREATE TABLE status.dead_letters (
    id           bigserial PRIMARY KEY,
    hub          text NOT NULL DEFAULT '',
    bundle_type  text NOT NULL DEFAULT '',
    version      text NOT NULL DEFAULT '',
    topic        text NOT NULL DEFAULT '',
    "partition"  integer NOT NULL DEFAULT -1,
    "offset"     bigint NOT NULL DEFAULT -1,
    reason       text NOT NULL,
    error        text NOT NULL DEFAULT '',
    headers      jsonb NOT NULL DEFAULT '{}',
    data         bytea,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dead_letters_reason_idx ON status.dead_letters (reason, created_at);
CREATE INDEX dead_letters_hub_idx ON status.dead_letters (hub, created_at);

---- create above / drop below ----

DROP SCHEMA event CASCADE;
DROP SCHEMA status CASCADE;
