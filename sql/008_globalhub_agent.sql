-- The current global-hub agent, exactly (README "The global-hub agent's
-- events"): the stored types it sends that 005 did not keep, and what the
-- bridge must remember of an agent's runs across its own restarts.

-- run_ids: the CloudEvents ids of the events that started the latest runs
-- of the agent for this (hub, type), oldest first, at most four. A run
-- starts at an event older than the newest one read whose id was never
-- read; an id listed here is a copy of an earlier run's first event, never
-- a new run (a late copy of a generation-0 event must not take the
-- database back). Empty for STB's own types.
ALTER TABLE status.bundle_versions
    ADD COLUMN run_ids text[] NOT NULL DEFAULT '{}';

-- policy.localspec: the hub's root policies (a generic bundle, like
-- managedcluster), each kept whole with its status cleared by the agent.
-- A policy is its metadata.uid on its hub; a delete names it by uid, or by
-- namespace and name.
CREATE TABLE status.local_policies (
    hub         text NOT NULL,
    policy_id   text NOT NULL,
    namespace   text NOT NULL DEFAULT '',
    name        text NOT NULL,
    payload     jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hub, policy_id)
);
CREATE INDEX local_policies_name_idx ON status.local_policies (hub, namespace, name);

-- security.alertcounts: the violation counts of each ACS Central
-- ("<namespace>/<name>", source) the hub reports, latest only.
CREATE TABLE status.security_alert_counts (
    hub         text NOT NULL,
    source      text NOT NULL,
    low         integer NOT NULL DEFAULT 0,
    medium      integer NOT NULL DEFAULT 0,
    high        integer NOT NULL DEFAULT 0,
    critical    integer NOT NULL DEFAULT 0,
    detail_url  text NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hub, source)
);

-- managedclustermigration: what a hub reports of each stage of a managed
-- cluster migration (the migration id and stage come as extensions or in
-- the data), latest per stage; a report with resync set clears the hub's.
CREATE TABLE status.cluster_migrations (
    hub           text NOT NULL,
    migration_id  text NOT NULL,
    stage         text NOT NULL,
    error_message text NOT NULL DEFAULT '',
    payload       jsonb NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hub, migration_id, stage)
);

---- create above / drop below ----

DROP TABLE status.cluster_migrations;
DROP TABLE status.security_alert_counts;
DROP TABLE status.local_policies;
ALTER TABLE status.bundle_versions DROP COLUMN run_ids;
