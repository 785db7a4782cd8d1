-- The global hub's own database (README "The global hub's database"): the
-- tables upstream's operator creates (stolostron/multicluster-global-hub
-- operator/pkg/controllers/storage/database/1.schemas.sql, 2.tables.sql,
-- 3.functions.sql, 4.trigger.sql) and that its manager, its Grafana
-- dashboards and its compliance history read.
--
-- On a database upstream's operator created, every table is there and this
-- migration leaves each one as it is: STB adopts them (db.CheckSchema
-- checks at start that every column it writes exists) and never alters
-- their shape; upstream's triggers stay upstream's. On an empty database
-- (the demo, the tests, a standalone bridge) it creates each missing table
-- with the same names, columns, types, keys, generated columns and monthly
-- partitions, and, on the tables it created, triggers of its own with the
-- effect upstream's have, so that a row reads the same on either database:
--
--   * a compliance row gets the cluster_id of the hub's live cluster of
--     that name when it has none (upstream: set_cluster_id_to_local_compliance
--     on local_status.compliance);
--   * a managed cluster written gives its cluster_id to the hub's
--     compliance rows of that name, and to the hub's cluster events that
--     carry the cluster's metadata.uid (upstream:
--     update_local_compliance_cluster_id, update_cluster_event_cluster_id);
--   * a replicated policy event folds into history.local_compliance for its
--     day (upstream: history.update_history_compliance_by_event).
--
-- Ours are statement-level where upstream's are per row and search by
-- name: upstream's compliance trigger updates every row of the hub's
-- cluster for each row written, which at 135,000 rows is quadratic.

CREATE SCHEMA IF NOT EXISTS status;
CREATE SCHEMA IF NOT EXISTS event;
CREATE SCHEMA IF NOT EXISTS local_spec;
CREATE SCHEMA IF NOT EXISTS local_status;
CREATE SCHEMA IF NOT EXISTS history;
CREATE SCHEMA IF NOT EXISTS security;

DO $$ BEGIN
    CREATE TYPE local_status.compliance_type AS ENUM ('compliant', 'non_compliant', 'pending', 'unknown');
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;
DO $$ BEGIN
    CREATE TYPE status.compliance_type AS ENUM ('compliant', 'non_compliant', 'pending', 'unknown');
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;
DO $$ BEGIN
    CREATE TYPE status.error_type AS ENUM ('disconnected', 'none');
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;

-- stb.ensure_month_partitions makes sure that each month of months has its
-- partition of parent, named as upstream's create_monthly_range_partitioned_table
-- names them (<schema>.<table>_YYYY_MM, from the first of the month to the
-- first of the next). The handlers call it before they insert into a
-- partitioned table, so that no row is lost to a month without one.
-- A partition that exists costs a catalog lookup and no lock; creating one
-- locks the parent until the transaction ends (a deadlock with another
-- writer is retried like any other).
CREATE FUNCTION stb.ensure_month_partitions(parent text, months timestamp[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    m timestamp;
    child text;
BEGIN
    FOR m IN SELECT DISTINCT date_trunc('month', x) FROM unnest(months) AS x WHERE x IS NOT NULL LOOP
        child := parent || '_' || to_char(m, 'YYYY_MM');
        IF to_regclass(child) IS NULL THEN
            EXECUTE format('CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM (%L) TO (%L)',
                child, parent, m, m + interval '1 month');
        END IF;
    END LOOP;
END $$;

-- Our triggers' functions (see the top of this file).

-- A statement's compliance rows without a cluster_id get the one of the
-- hub's live cluster of that name. The updates it makes fire the update
-- trigger again, one level down, which returns at once.
CREATE FUNCTION stb.compliance_cluster_ids() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    UPDATE local_status.compliance AS c
    SET cluster_id = m.cluster_id
    FROM (SELECT DISTINCT leaf_hub_name, cluster_name FROM written WHERE cluster_id IS NULL) AS w,
         LATERAL (SELECT mc.cluster_id FROM status.managed_clusters AS mc
                  WHERE mc.leaf_hub_name = w.leaf_hub_name AND mc.cluster_name = w.cluster_name
                    AND mc.deleted_at IS NULL
                  LIMIT 1) AS m
    WHERE c.leaf_hub_name = w.leaf_hub_name AND c.cluster_name = w.cluster_name AND c.cluster_id IS NULL;
    RETURN NULL;
END $$;

-- A statement's managed clusters give their cluster_id to the compliance
-- rows of their hub and name, and to their hub's events about them that
-- still carry the cluster's metadata.uid.
CREATE FUNCTION stb.managed_cluster_ids() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE local_status.compliance AS c
    SET cluster_id = w.cluster_id
    FROM written AS w
    WHERE c.leaf_hub_name = w.leaf_hub_name AND c.cluster_name = w.cluster_name
      AND c.cluster_id IS DISTINCT FROM w.cluster_id;
    UPDATE event.managed_clusters AS e
    SET cluster_id = w.cluster_id
    FROM written AS w
    WHERE e.leaf_hub_name = w.leaf_hub_name AND e.cluster_name = w.cluster_name
      AND e.cluster_id::text = w.payload -> 'metadata' ->> 'uid'
      AND e.cluster_id <> w.cluster_id;
    RETURN NULL;
END $$;

-- A replicated policy event folds into its day of
-- history.local_compliance: the day's state is the worst seen (pending,
-- then unknown, then non_compliant, then compliant) and every change of
-- state counts once in compliance_changed_frequency.
CREATE FUNCTION stb.history_compliance_by_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO history.local_compliance AS h
        (policy_id, cluster_id, leaf_hub_name, compliance, compliance_date, compliance_changed_frequency)
    VALUES (NEW.policy_id, NEW.cluster_id, NEW.leaf_hub_name, NEW.compliance, NEW.created_at::date, 0)
    ON CONFLICT (leaf_hub_name, policy_id, cluster_id, compliance_date) DO UPDATE SET
        compliance = CASE
            WHEN 'pending' IN (h.compliance, excluded.compliance) THEN 'pending'
            WHEN 'unknown' IN (h.compliance, excluded.compliance) THEN 'unknown'
            WHEN 'non_compliant' IN (h.compliance, excluded.compliance) THEN 'non_compliant'
            ELSE 'compliant'
        END::local_status.compliance_type,
        compliance_changed_frequency = h.compliance_changed_frequency
            + CASE WHEN h.compliance <> excluded.compliance THEN 1 ELSE 0 END;
    RETURN NEW;
END $$;

DO $$ BEGIN
IF to_regclass('status.transport') IS NULL THEN
    -- Kafka positions, one row per partition named '<topic>@<partition>',
    -- payload {"partition","offset","ownerIdentity"}: shared with
    -- upstream's manager (README "Taking over from upstream's manager").
    CREATE TABLE status.transport (
        name       character varying(254) PRIMARY KEY,
        payload    jsonb NOT NULL,
        created_at timestamp without time zone NOT NULL DEFAULT now(),
        updated_at timestamp without time zone NOT NULL DEFAULT now()
    );
END IF;

IF to_regclass('status.managed_clusters') IS NULL THEN
    CREATE TABLE status.managed_clusters (
        leaf_hub_name character varying(254) NOT NULL,
        cluster_name  character varying(254) GENERATED ALWAYS AS (payload -> 'metadata' ->> 'name') STORED,
        cluster_id    uuid PRIMARY KEY,
        payload       jsonb NOT NULL,
        error         status.error_type NOT NULL,
        created_at    timestamp without time zone NOT NULL DEFAULT now(),
        updated_at    timestamp without time zone NOT NULL DEFAULT now(),
        deleted_at    timestamp without time zone
    );
    CREATE INDEX cluster_deleted_at_idx ON status.managed_clusters (deleted_at);
    CREATE INDEX leafhub_cluster_idx ON status.managed_clusters (leaf_hub_name, cluster_name);
    CREATE TRIGGER stb_managed_cluster_ids_insert AFTER INSERT ON status.managed_clusters
        REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION stb.managed_cluster_ids();
    CREATE TRIGGER stb_managed_cluster_ids_update AFTER UPDATE ON status.managed_clusters
        REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION stb.managed_cluster_ids();
END IF;

IF to_regclass('status.leaf_hubs') IS NULL THEN
    CREATE TABLE status.leaf_hubs (
        leaf_hub_name character varying(254) NOT NULL,
        cluster_id    uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000',
        payload       jsonb NOT NULL,
        console_url   text GENERATED ALWAYS AS (payload ->> 'consoleURL') STORED,
        grafana_url   text GENERATED ALWAYS AS (payload ->> 'grafanaURL') STORED,
        created_at    timestamp without time zone NOT NULL DEFAULT now(),
        updated_at    timestamp without time zone NOT NULL DEFAULT now(),
        deleted_at    timestamp without time zone,
        PRIMARY KEY (cluster_id, leaf_hub_name)
    );
    CREATE INDEX leafhub_deleted_at_idx ON status.leaf_hubs (deleted_at);
END IF;

IF to_regclass('status.leaf_hub_heartbeats') IS NULL THEN
    CREATE TABLE status.leaf_hub_heartbeats (
        leaf_hub_name  character varying(254) NOT NULL,
        last_timestamp timestamp without time zone NOT NULL DEFAULT now(),
        status         character varying(10) DEFAULT 'active'
    );
    CREATE UNIQUE INDEX leaf_hub_heartbeats_leaf_hub_idx ON status.leaf_hub_heartbeats (leaf_hub_name);
    CREATE INDEX leaf_hub_heartbeats_leaf_hub_timestamp_idx ON status.leaf_hub_heartbeats (last_timestamp);
    CREATE INDEX leaf_hub_heartbeats_leaf_hub_status_idx ON status.leaf_hub_heartbeats (status);
END IF;

IF to_regclass('status.managed_cluster_migration') IS NULL THEN
    CREATE TABLE status.managed_cluster_migration (
        id           serial PRIMARY KEY,
        from_hub     text NOT NULL,
        to_hub       text NOT NULL,
        cluster_name text NOT NULL,
        payload      jsonb NOT NULL,
        stage        text NOT NULL,
        created_at   timestamp without time zone NOT NULL DEFAULT now(),
        updated_at   timestamp without time zone NOT NULL DEFAULT now(),
        UNIQUE (from_hub, to_hub, cluster_name)
    );
END IF;

IF to_regclass('local_spec.policies') IS NULL THEN
    CREATE TABLE local_spec.policies (
        leaf_hub_name   character varying(254) NOT NULL,
        payload         jsonb NOT NULL,
        created_at      timestamp without time zone NOT NULL DEFAULT now(),
        updated_at      timestamp without time zone NOT NULL DEFAULT now(),
        deleted_at      timestamp without time zone,
        policy_id       uuid PRIMARY KEY,
        policy_name     character varying(254) GENERATED ALWAYS AS (payload -> 'metadata' ->> 'name') STORED,
        policy_standard character varying(254) GENERATED ALWAYS AS (payload -> 'metadata' -> 'annotations' ->> 'policy.open-cluster-management.io/standards') STORED,
        policy_category character varying(254) GENERATED ALWAYS AS (payload -> 'metadata' -> 'annotations' ->> 'policy.open-cluster-management.io/categories') STORED,
        policy_control  character varying(254) GENERATED ALWAYS AS (payload -> 'metadata' -> 'annotations' ->> 'policy.open-cluster-management.io/controls') STORED
    );
    CREATE INDEX local_policies_deleted_at_idx ON local_spec.policies (deleted_at);
    CREATE INDEX local_policies_leafhub_idx ON local_spec.policies (leaf_hub_name);
END IF;

IF to_regclass('local_status.compliance') IS NULL THEN
    CREATE TABLE local_status.compliance (
        policy_id     uuid NOT NULL,
        cluster_name  character varying(254) NOT NULL,
        leaf_hub_name character varying(254) NOT NULL,
        error         status.error_type NOT NULL,
        compliance    local_status.compliance_type NOT NULL,
        cluster_id    uuid,
        PRIMARY KEY (policy_id, cluster_name, leaf_hub_name)
    );
    -- Ours: a hub's rows of a cluster, for the cluster_id triggers and the
    -- handlers' per-hub statements (compliance is in no index, so its
    -- updates stay HOT).
    CREATE INDEX stb_compliance_hub_cluster_idx ON local_status.compliance (leaf_hub_name, cluster_name);
    CREATE TRIGGER stb_compliance_cluster_ids_insert AFTER INSERT ON local_status.compliance
        REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION stb.compliance_cluster_ids();
    CREATE TRIGGER stb_compliance_cluster_ids_update AFTER UPDATE ON local_status.compliance
        REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION stb.compliance_cluster_ids();
END IF;

IF to_regclass('event.managed_clusters') IS NULL THEN
    CREATE TABLE event.managed_clusters (
        event_namespace      text NOT NULL,
        event_name           text NOT NULL,
        cluster_name         text NOT NULL,
        cluster_id           uuid NOT NULL,
        leaf_hub_name        character varying(256) NOT NULL,
        message              text,
        reason               text,
        reporting_controller text,
        reporting_instance   text,
        event_type           character varying(64) NOT NULL,
        created_at           timestamp without time zone NOT NULL DEFAULT now(),
        CONSTRAINT managed_clusters_unique_constraint UNIQUE (leaf_hub_name, event_name, created_at)
    ) PARTITION BY RANGE (created_at);
END IF;

IF to_regclass('event.local_policies') IS NULL THEN
    CREATE TABLE event.local_policies (
        event_name      text NOT NULL,
        event_namespace text,
        policy_id       uuid NOT NULL,
        cluster_id      uuid NOT NULL,
        cluster_name    text,
        leaf_hub_name   character varying(254) NOT NULL,
        message         text,
        reason          text,
        count           integer NOT NULL DEFAULT 0,
        source          jsonb,
        created_at      timestamp without time zone NOT NULL DEFAULT now(),
        compliance      local_status.compliance_type NOT NULL,
        CONSTRAINT local_policies_unique_constraint UNIQUE (event_name, count, created_at)
    ) PARTITION BY RANGE (created_at);
    CREATE TRIGGER stb_history_compliance_by_event AFTER INSERT ON event.local_policies
        FOR EACH ROW EXECUTE FUNCTION stb.history_compliance_by_event();
END IF;

IF to_regclass('event.local_root_policies') IS NULL THEN
    CREATE TABLE event.local_root_policies (
        event_name      text NOT NULL,
        event_namespace text,
        policy_id       uuid NOT NULL,
        leaf_hub_name   character varying(254) NOT NULL,
        message         text,
        reason          text,
        count           integer NOT NULL DEFAULT 0,
        source          jsonb,
        created_at      timestamp without time zone NOT NULL DEFAULT now(),
        compliance      local_status.compliance_type NOT NULL,
        CONSTRAINT local_root_policies_unique_constraint UNIQUE (event_name, count, created_at)
    ) PARTITION BY RANGE (created_at);
END IF;

IF to_regclass('event.data_retention_job_log') IS NULL THEN
    CREATE TABLE event.data_retention_job_log (
        table_name    character varying(254) NOT NULL,
        start_at      timestamp NOT NULL DEFAULT now(),
        end_at        timestamp NOT NULL DEFAULT now(),
        min_partition character varying(254),
        max_partition character varying(254),
        min_deletion  timestamp,
        error         text
    );
END IF;

IF to_regclass('history.local_compliance') IS NULL THEN
    CREATE TABLE history.local_compliance (
        policy_id                    uuid NOT NULL,
        cluster_id                   uuid,
        leaf_hub_name                character varying(254) NOT NULL,
        compliance_date              date NOT NULL DEFAULT (CURRENT_DATE - interval '1 day'),
        compliance                   local_status.compliance_type NOT NULL,
        compliance_changed_frequency integer NOT NULL DEFAULT 0,
        CONSTRAINT local_policies_unique_constraint UNIQUE (leaf_hub_name, policy_id, cluster_id, compliance_date)
    ) PARTITION BY RANGE (compliance_date);
END IF;

IF to_regclass('history.local_compliance_job_log') IS NULL THEN
    CREATE TABLE history.local_compliance_job_log (
        name     character varying(254) NOT NULL,
        start_at timestamp NOT NULL DEFAULT now(),
        end_at   timestamp NOT NULL DEFAULT now(),
        total    int8,
        inserted int8,
        offsets  int8,
        error    text
    );
END IF;

IF to_regclass('security.alert_counts') IS NULL THEN
    CREATE TABLE security.alert_counts (
        hub_name   text NOT NULL,
        low        integer NOT NULL,
        medium     integer NOT NULL,
        high       integer NOT NULL,
        critical   integer NOT NULL,
        detail_url text NOT NULL,
        source     text NOT NULL,
        created_at timestamp without time zone NOT NULL DEFAULT now(),
        updated_at timestamp without time zone NOT NULL DEFAULT now(),
        PRIMARY KEY (hub_name, source)
    );
END IF;
END $$;

-- The current and the previous month, as upstream's operator makes them.
SELECT stb.ensure_month_partitions(t, ARRAY[now()::timestamp, (now() - interval '1 month')::timestamp])
FROM unnest(ARRAY['event.managed_clusters', 'event.local_policies', 'event.local_root_policies',
                  'history.local_compliance']) AS t;

---- create above / drop below ----

-- Only what STB added: the global hub's tables are the global hub's, and
-- a down migration must not drop a database upstream's operator made.
DROP FUNCTION stb.history_compliance_by_event() CASCADE;
DROP FUNCTION stb.managed_cluster_ids() CASCADE;
DROP FUNCTION stb.compliance_cluster_ids() CASCADE;
DROP FUNCTION stb.ensure_month_partitions(text, timestamp[]);
