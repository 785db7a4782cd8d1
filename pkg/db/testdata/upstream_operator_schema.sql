-- A TEST FIXTURE, not a migration: the global hub's database as upstream's
-- operator creates it, so that STB's tests can run db.Migrate, `stb
-- migrate` and the bridge against a database STB did not create
-- (pkg/db/upstream_schema_test.go, test/upstream_schema_test.go,
-- test/takeover_test.go).
--
-- It is STB's own text, written from the facts of
-- stolostron/multicluster-global-hub,
-- operator/pkg/controllers/storage/database/:
--   1.schemas.sql   (@af4f17cd)  the six schemas, pg_stat_statements, the
--                                enum types;
--   2.tables.sql    (@9f733dbf)  every table, its columns in their order,
--                                types, defaults, generated columns, keys,
--                                unique constraints, indexes and range
--                                partitioning (with status.managed_cluster_migration);
--   3.functions.sql (@0e5877d2)  the trigger functions, the daily history
--                                procedures, the monthly partition helpers;
--   4.trigger.sql   (@9f733dbf)  the ROW-level triggers, and the partitions
--                                of the current and the previous month.
-- Names, columns, types, keys and what each trigger and function does are
-- upstream's; the SQL and PL/pgSQL wording is ours. Left out: the DROPs of
-- functions upstream deprecated, which a new database never had.
--
-- Like the operator's scripts, which it re-applies at every reconcile,
-- this file can be run again on a database that already has it (or on one
-- STB migrated first).

-- 1.schemas.sql ------------------------------------------------------------

CREATE SCHEMA IF NOT EXISTS history;
CREATE SCHEMA IF NOT EXISTS local_spec;
CREATE SCHEMA IF NOT EXISTS local_status;
CREATE SCHEMA IF NOT EXISTS status;
CREATE SCHEMA IF NOT EXISTS event;
CREATE SCHEMA IF NOT EXISTS security;

-- Upstream creates it unconditionally; a test server built without the
-- contrib modules still gets the rest.
DO $fixture$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_stat_statements not available here: %', SQLERRM;
END
$fixture$;

DO $fixture$
BEGIN
    IF to_regtype('local_status.compliance_type') IS NULL THEN
        CREATE TYPE local_status.compliance_type AS ENUM ('compliant', 'non_compliant', 'pending', 'unknown');
    END IF;
    IF to_regtype('status.compliance_type') IS NULL THEN
        CREATE TYPE status.compliance_type AS ENUM ('compliant', 'non_compliant', 'pending', 'unknown');
    END IF;
    IF to_regtype('status.error_type') IS NULL THEN
        CREATE TYPE status.error_type AS ENUM ('disconnected', 'none');
    END IF;
END
$fixture$;

-- 2.tables.sql -------------------------------------------------------------

CREATE TABLE IF NOT EXISTS local_spec.policies (
    leaf_hub_name   varchar(254) NOT NULL,
    payload         jsonb        NOT NULL,
    created_at      timestamp    NOT NULL DEFAULT now(),
    updated_at      timestamp    NOT NULL DEFAULT now(),
    deleted_at      timestamp,
    policy_id       uuid         PRIMARY KEY,
    policy_name     varchar(254) GENERATED ALWAYS AS ((payload -> 'metadata') ->> 'name') STORED,
    policy_standard varchar(254) GENERATED ALWAYS AS (((payload -> 'metadata') -> 'annotations') ->> 'policy.open-cluster-management.io/standards') STORED,
    policy_category varchar(254) GENERATED ALWAYS AS (((payload -> 'metadata') -> 'annotations') ->> 'policy.open-cluster-management.io/categories') STORED,
    policy_control  varchar(254) GENERATED ALWAYS AS (((payload -> 'metadata') -> 'annotations') ->> 'policy.open-cluster-management.io/controls') STORED
);
CREATE INDEX IF NOT EXISTS local_policies_deleted_at_idx ON local_spec.policies USING btree (deleted_at);
CREATE INDEX IF NOT EXISTS local_policies_leafhub_idx ON local_spec.policies USING btree (leaf_hub_name);

CREATE TABLE IF NOT EXISTS local_status.compliance (
    policy_id     uuid                         NOT NULL,
    cluster_name  varchar(254)                 NOT NULL,
    leaf_hub_name varchar(254)                 NOT NULL,
    error         status.error_type            NOT NULL,
    compliance    local_status.compliance_type NOT NULL,
    cluster_id    uuid,
    PRIMARY KEY (policy_id, cluster_name, leaf_hub_name)
);

CREATE TABLE IF NOT EXISTS status.leaf_hub_heartbeats (
    leaf_hub_name  varchar(254) NOT NULL,
    last_timestamp timestamp    NOT NULL DEFAULT now(),
    status         varchar(10)  DEFAULT 'active'
);
CREATE UNIQUE INDEX IF NOT EXISTS leaf_hub_heartbeats_leaf_hub_idx ON status.leaf_hub_heartbeats USING btree (leaf_hub_name);
CREATE INDEX IF NOT EXISTS leaf_hub_heartbeats_leaf_hub_timestamp_idx ON status.leaf_hub_heartbeats USING btree (last_timestamp);
CREATE INDEX IF NOT EXISTS leaf_hub_heartbeats_leaf_hub_status_idx ON status.leaf_hub_heartbeats USING btree (status);

CREATE TABLE IF NOT EXISTS status.managed_clusters (
    leaf_hub_name varchar(254)      NOT NULL,
    cluster_name  varchar(254)      GENERATED ALWAYS AS ((payload -> 'metadata') ->> 'name') STORED,
    cluster_id    uuid              PRIMARY KEY,
    payload       jsonb             NOT NULL,
    error         status.error_type NOT NULL,
    created_at    timestamp         NOT NULL DEFAULT now(),
    updated_at    timestamp         NOT NULL DEFAULT now(),
    deleted_at    timestamp
);
CREATE INDEX IF NOT EXISTS cluster_deleted_at_idx ON status.managed_clusters USING btree (deleted_at);
CREATE INDEX IF NOT EXISTS leafhub_cluster_idx ON status.managed_clusters USING btree (leaf_hub_name, cluster_name);

CREATE TABLE IF NOT EXISTS status.leaf_hubs (
    leaf_hub_name varchar(254) NOT NULL,
    cluster_id    uuid         NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000'::uuid,
    payload       jsonb        NOT NULL,
    console_url   text         GENERATED ALWAYS AS (payload ->> 'consoleURL') STORED,
    grafana_url   text         GENERATED ALWAYS AS (payload ->> 'grafanaURL') STORED,
    created_at    timestamp    NOT NULL DEFAULT now(),
    updated_at    timestamp    NOT NULL DEFAULT now(),
    deleted_at    timestamp,
    PRIMARY KEY (cluster_id, leaf_hub_name)
);
CREATE INDEX IF NOT EXISTS leafhub_deleted_at_idx ON status.leaf_hubs USING btree (deleted_at);

-- The event tables and the history are range-partitioned by month.
CREATE TABLE IF NOT EXISTS event.managed_clusters (
    event_namespace      text         NOT NULL,
    event_name           text         NOT NULL,
    cluster_name         text         NOT NULL,
    cluster_id           uuid         NOT NULL,
    leaf_hub_name        varchar(256) NOT NULL,
    message              text,
    reason               text,
    reporting_controller text,
    reporting_instance   text,
    event_type           varchar(64)  NOT NULL,
    created_at           timestamp    NOT NULL DEFAULT now(),
    CONSTRAINT managed_clusters_unique_constraint UNIQUE (leaf_hub_name, event_name, created_at)
) PARTITION BY RANGE (created_at);

CREATE TABLE IF NOT EXISTS event.local_policies (
    event_name      text                         NOT NULL,
    event_namespace text,
    policy_id       uuid                         NOT NULL,
    cluster_id      uuid                         NOT NULL,
    cluster_name    text,
    leaf_hub_name   varchar(254)                 NOT NULL,
    message         text,
    reason          text,
    count           integer                      NOT NULL DEFAULT 0,
    source          jsonb,
    created_at      timestamp                    NOT NULL DEFAULT now(),
    compliance      local_status.compliance_type NOT NULL,
    CONSTRAINT local_policies_unique_constraint UNIQUE (event_name, count, created_at)
) PARTITION BY RANGE (created_at);

CREATE TABLE IF NOT EXISTS event.local_root_policies (
    event_name      text                         NOT NULL,
    event_namespace text,
    policy_id       uuid                         NOT NULL,
    leaf_hub_name   varchar(254)                 NOT NULL,
    message         text,
    reason          text,
    count           integer                      NOT NULL DEFAULT 0,
    source          jsonb,
    created_at      timestamp                    NOT NULL DEFAULT now(),
    compliance      local_status.compliance_type NOT NULL,
    CONSTRAINT local_root_policies_unique_constraint UNIQUE (event_name, count, created_at)
) PARTITION BY RANGE (created_at);

-- What the data retention job did: the oldest and newest partitions left,
-- the oldest row it deleted.
CREATE TABLE IF NOT EXISTS event.data_retention_job_log (
    table_name    varchar(254) NOT NULL,
    start_at      timestamp    NOT NULL DEFAULT now(),
    end_at        timestamp    NOT NULL DEFAULT now(),
    min_partition varchar(254),
    max_partition varchar(254),
    min_deletion  timestamp,
    error         text
);

CREATE TABLE IF NOT EXISTS history.local_compliance (
    policy_id                    uuid                         NOT NULL,
    cluster_id                   uuid,
    leaf_hub_name                varchar(254)                 NOT NULL,
    compliance_date              date                         NOT NULL DEFAULT (CURRENT_DATE - '1 day'::interval),
    compliance                   local_status.compliance_type NOT NULL,
    compliance_changed_frequency integer                      NOT NULL DEFAULT 0,
    CONSTRAINT local_policies_unique_constraint UNIQUE (leaf_hub_name, policy_id, cluster_id, compliance_date)
) PARTITION BY RANGE (compliance_date);

CREATE TABLE IF NOT EXISTS history.local_compliance_job_log (
    name     varchar(254) NOT NULL,
    start_at timestamp    NOT NULL DEFAULT now(),
    end_at   timestamp    NOT NULL DEFAULT now(),
    total    bigint,
    inserted bigint,
    offsets  bigint,
    error    text
);

-- The manager's Kafka positions: one row per partition, named
-- "<topic>@<partition>", payload {"partition","offset","ownerIdentity"}.
CREATE TABLE IF NOT EXISTS status.transport (
    name       varchar(254) PRIMARY KEY,
    payload    jsonb        NOT NULL,
    created_at timestamp    NOT NULL DEFAULT now(),
    updated_at timestamp    NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS security.alert_counts (
    hub_name   text      NOT NULL,
    low        integer   NOT NULL,
    medium     integer   NOT NULL,
    high       integer   NOT NULL,
    critical   integer   NOT NULL,
    detail_url text      NOT NULL,
    source     text      NOT NULL,
    created_at timestamp NOT NULL DEFAULT now(),
    updated_at timestamp NOT NULL DEFAULT now(),
    PRIMARY KEY (hub_name, source)
);

-- One row per migration of a cluster from one hub to another.
CREATE TABLE IF NOT EXISTS status.managed_cluster_migration (
    id           serial    PRIMARY KEY,
    from_hub     text      NOT NULL,
    to_hub       text      NOT NULL,
    cluster_name text      NOT NULL,
    payload      jsonb     NOT NULL,
    stage        text      NOT NULL,
    created_at   timestamp NOT NULL DEFAULT now(),
    updated_at   timestamp NOT NULL DEFAULT now(),
    UNIQUE (from_hub, to_hub, cluster_name)
);

-- 3.functions.sql ----------------------------------------------------------

-- Stamps updated_at on the row being updated.
CREATE OR REPLACE FUNCTION public.trigger_set_timestamp() RETURNS trigger
LANGUAGE plpgsql AS $fixture$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END
$fixture$;

-- A managed cluster written (one row) gives its cluster_id to every
-- compliance row of its hub that names it, whatever id they had.
CREATE OR REPLACE FUNCTION public.update_local_compliance_cluster_id() RETURNS trigger
LANGUAGE plpgsql AS $fixture$
DECLARE
    mc_name text := NEW.payload -> 'metadata' ->> 'name';
BEGIN
    UPDATE local_status.compliance AS lc
    SET cluster_id = NEW.cluster_id
    WHERE lc.leaf_hub_name = NEW.leaf_hub_name
      AND lc.cluster_name = mc_name;
    RETURN NEW;
END
$fixture$;

-- A managed cluster written (one row) gives its cluster_id to its hub's
-- events about it that still carry the cluster's metadata.uid as their
-- cluster_id. The uid is cast to uuid, so a uid that is not one fails the
-- write of the managed cluster.
CREATE OR REPLACE FUNCTION public.update_cluster_event_cluster_id() RETURNS trigger
LANGUAGE plpgsql AS $fixture$
DECLARE
    mc_name text := NEW.payload -> 'metadata' ->> 'name';
    mc_uid  uuid := (NEW.payload -> 'metadata' ->> 'uid')::uuid;
BEGIN
    UPDATE event.managed_clusters AS ev
    SET cluster_id = NEW.cluster_id
    WHERE ev.leaf_hub_name = NEW.leaf_hub_name
      AND ev.cluster_name = mc_name
      AND ev.cluster_id = mc_uid;
    RETURN NEW;
END
$fixture$;

-- Copies the compliance rows of the day before curr_date to curr_date,
-- with no change counted, leaving rows that day already has.
-- CALL history.generate_local_compliance('2023-07-06');
CREATE OR REPLACE PROCEDURE history.generate_local_compliance(curr_date text)
LANGUAGE plpgsql AS $fixture$
DECLARE
    today     date := curr_date::date;
    yesterday date := (curr_date::date - interval '1 day')::date;
BEGIN
    INSERT INTO history.local_compliance
        (policy_id, cluster_id, leaf_hub_name, compliance_date, compliance, compliance_changed_frequency)
    SELECT y.policy_id, y.cluster_id, y.leaf_hub_name, today, y.compliance, 0
    FROM history.local_compliance AS y
    WHERE y.compliance_date = yesterday
    ON CONFLICT (leaf_hub_name, policy_id, cluster_id, compliance_date) DO NOTHING;
END
$fixture$;

-- Folds the replicated policy events from curr_date to the next midnight
-- (both ends included) into curr_date's history: per cluster, policy and
-- hub, compliant, pending or unknown when every event said so, else
-- non_compliant; the frequency is how often an event's compliance differs
-- from the one before it (per cluster and policy, by created_at). What the
-- day already has is replaced.
-- CALL history.update_local_compliance('2023-07-06');
CREATE OR REPLACE PROCEDURE history.update_local_compliance(curr_date text)
LANGUAGE plpgsql AS $fixture$
DECLARE
    day_from date := curr_date::date;
    day_to   date := (curr_date::date + interval '1 day')::date;
BEGIN
    INSERT INTO history.local_compliance
        (policy_id, cluster_id, leaf_hub_name, compliance_date, compliance, compliance_changed_frequency)
    SELECT agg.policy_id, agg.cluster_id, agg.leaf_hub_name, day_from, agg.state,
           (SELECT count(*)
            FROM (SELECT e.compliance,
                         lag(e.compliance) OVER (PARTITION BY e.cluster_id, e.policy_id ORDER BY e.created_at) AS previous
                  FROM event.local_policies AS e
                  WHERE e.created_at BETWEEN day_from AND day_to
                    AND e.cluster_id = agg.cluster_id AND e.policy_id = agg.policy_id) AS seq
            WHERE seq.compliance <> seq.previous)
    FROM (SELECT cluster_id, policy_id, leaf_hub_name,
                 (CASE
                      WHEN bool_and(compliance = 'compliant') THEN 'compliant'
                      WHEN bool_and(compliance = 'pending') THEN 'pending'
                      WHEN bool_and(compliance = 'unknown') THEN 'unknown'
                      ELSE 'non_compliant'
                  END)::local_status.compliance_type AS state
          FROM event.local_policies
          WHERE created_at BETWEEN day_from AND day_to
          GROUP BY cluster_id, policy_id, leaf_hub_name) AS agg
    ORDER BY agg.cluster_id, agg.policy_id
    ON CONFLICT (leaf_hub_name, policy_id, cluster_id, compliance_date) DO UPDATE
        SET compliance = excluded.compliance,
            compliance_changed_frequency = excluded.compliance_changed_frequency;
END
$fixture$;

-- Creates the partition of full_table_name for the month of input_time
-- (a date as text), named <full_table_name>_YYYY_MM, from the first of that
-- month to the first of the next, unless it exists.
-- SELECT create_monthly_range_partitioned_table('event.local_root_policies', '2023-08-01');
CREATE OR REPLACE FUNCTION public.create_monthly_range_partitioned_table(full_table_name text, input_time text)
RETURNS void
LANGUAGE plpgsql AS $fixture$
DECLARE
    first_day date := date_trunc('month', input_time::date)::date;
BEGIN
    EXECUTE format('CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM (%L) TO (%L)',
                   full_table_name || '_' || to_char(first_day, 'YYYY_MM'), full_table_name,
                   first_day, (first_day + interval '1 month')::date);
END
$fixture$;

-- A compliance row written (one row) that has no cluster_id takes, with
-- every other row of its hub and cluster name without one, the cluster_id
-- of the hub's managed cluster of that name that is not deleted (any one
-- of them; NULL when there is none).
CREATE OR REPLACE FUNCTION public.set_cluster_id_to_local_compliance() RETURNS trigger
LANGUAGE plpgsql AS $fixture$
BEGIN
    UPDATE local_status.compliance AS lc
    SET cluster_id = (SELECT mc.cluster_id
                      FROM status.managed_clusters AS mc
                      WHERE mc.leaf_hub_name = NEW.leaf_hub_name
                        AND mc.payload -> 'metadata' ->> 'name' = NEW.cluster_name
                        AND mc.deleted_at IS NULL
                      LIMIT 1)
    WHERE lc.leaf_hub_name = NEW.leaf_hub_name
      AND lc.cluster_name = NEW.cluster_name
      AND lc.cluster_id IS NULL;
    RETURN NEW;
END
$fixture$;

-- Drops the partition of full_table_name for the month of input_time, if
-- there is one.
-- SELECT delete_monthly_range_partitioned_table('event.local_root_policies', '2023-08-01');
CREATE OR REPLACE FUNCTION public.delete_monthly_range_partitioned_table(full_table_name text, input_time text)
RETURNS void
LANGUAGE plpgsql AS $fixture$
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS %s', full_table_name || '_' || to_char(input_time::date, 'YYYY_MM'));
END
$fixture$;

-- A replicated policy event (one row) folds into history.local_compliance
-- for the day of its created_at: a new day starts at the event's state
-- with no change counted; a day that has a row keeps the worst state seen
-- (pending, then unknown, then non_compliant, then compliant) and counts a
-- change when the event's state differs from the stored one.
CREATE OR REPLACE FUNCTION history.update_history_compliance_by_event() RETURNS trigger
LANGUAGE plpgsql AS $fixture$
BEGIN
    INSERT INTO history.local_compliance AS day
        (policy_id, cluster_id, leaf_hub_name, compliance, compliance_date, compliance_changed_frequency)
    VALUES (NEW.policy_id, NEW.cluster_id, NEW.leaf_hub_name, NEW.compliance, NEW.created_at::date, 0)
    ON CONFLICT (leaf_hub_name, policy_id, cluster_id, compliance_date) DO UPDATE SET
        compliance = (CASE
                          WHEN 'pending' IN (day.compliance, excluded.compliance) THEN 'pending'
                          WHEN 'unknown' IN (day.compliance, excluded.compliance) THEN 'unknown'
                          WHEN 'non_compliant' IN (day.compliance, excluded.compliance) THEN 'non_compliant'
                          ELSE 'compliant'
                      END)::local_status.compliance_type,
        compliance_changed_frequency = day.compliance_changed_frequency
            + (CASE WHEN day.compliance <> excluded.compliance THEN 1 ELSE 0 END);
    RETURN NEW;
END
$fixture$;

-- 4.trigger.sql ------------------------------------------------------------

-- Every trigger is per row. Each is dropped first, so that running this
-- again replaces it.

DROP TRIGGER IF EXISTS update_managed_cluster_migration_updated_on ON status.managed_cluster_migration;
CREATE TRIGGER update_managed_cluster_migration_updated_on
    BEFORE UPDATE ON status.managed_cluster_migration
    FOR EACH ROW EXECUTE FUNCTION public.trigger_set_timestamp();

-- Only for writes from outside a trigger, so that its own UPDATE does not
-- fire it again.
DROP TRIGGER IF EXISTS update_compliance_table ON local_status.compliance;
CREATE TRIGGER update_compliance_table
    AFTER INSERT OR UPDATE ON local_status.compliance
    FOR EACH ROW WHEN (pg_trigger_depth() < 1)
    EXECUTE FUNCTION public.set_cluster_id_to_local_compliance();

DROP TRIGGER IF EXISTS update_local_compliance_cluster_id_trigger ON status.managed_clusters;
CREATE TRIGGER update_local_compliance_cluster_id_trigger
    AFTER INSERT OR UPDATE ON status.managed_clusters
    FOR EACH ROW EXECUTE FUNCTION public.update_local_compliance_cluster_id();

DROP TRIGGER IF EXISTS update_cluster_event_cluster_id_trigger ON status.managed_clusters;
CREATE TRIGGER update_cluster_event_cluster_id_trigger
    AFTER INSERT OR UPDATE ON status.managed_clusters
    FOR EACH ROW EXECUTE FUNCTION public.update_cluster_event_cluster_id();

-- The partitions of this month and the one before (for late data), of each
-- partitioned table.
SELECT public.create_monthly_range_partitioned_table(parent, to_char(month, 'YYYY-MM-DD'))
FROM unnest(ARRAY['event.local_root_policies', 'event.local_policies',
                  'history.local_compliance', 'event.managed_clusters']) AS parent,
     unnest(ARRAY[current_date, (current_date - interval '1 month')::date]) AS month;

DROP TRIGGER IF EXISTS trg_update_history_compliance_by_event ON event.local_policies;
CREATE TRIGGER trg_update_history_compliance_by_event
    AFTER INSERT ON event.local_policies
    FOR EACH ROW EXECUTE FUNCTION history.update_history_compliance_by_event();
COMMENT ON TRIGGER trg_update_history_compliance_by_event ON event.local_policies IS
    'Folds each replicated policy event into history.local_compliance';
