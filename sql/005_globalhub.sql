-- The global-hub agents' events (the "globalhub" wire profile; README,
-- "Wire format"). Their compliance has a fourth state, pending (a policy
-- the agent has not evaluated on the cluster yet), and their hub info and
-- events have tables of their own. Everything is keyed by hub first, like
-- the rest of the schema: a hub's rows are never shared with another hub.

ALTER TABLE status.compliance DROP CONSTRAINT IF EXISTS compliance_compliance_check;
ALTER TABLE status.compliance ADD CONSTRAINT compliance_compliance_check
    CHECK (compliance IN ('compliant', 'non_compliant', 'unknown', 'pending'));

-- managedhub.info: what the hub says about itself (consoleURL, grafanaURL,
-- clusterId, …), kept whole.
CREATE TABLE status.hub_info (
    hub         text PRIMARY KEY,
    cluster_id  text NOT NULL DEFAULT '',
    payload     jsonb NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- event.managedcluster: Kubernetes events about managed clusters (import,
-- detach). An event is identified by its name and creation time on its hub;
-- the same event read twice is stored once.
CREATE TABLE event.managed_cluster_events (
    hub             text NOT NULL,
    event_name      text NOT NULL,
    created_at      timestamptz NOT NULL,
    event_namespace text NOT NULL DEFAULT '',
    cluster_name    text NOT NULL DEFAULT '',
    cluster_id      text NOT NULL DEFAULT '',
    reason          text NOT NULL DEFAULT '',
    message         text NOT NULL DEFAULT '',
    event_type      text NOT NULL DEFAULT '',
    payload         jsonb NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hub, event_name, created_at)
);

-- event.localrootpolicy and event.localreplicatedpolicy: policy events of
-- the hub's root policies (cluster_name '') and of their replicas on the
-- managed clusters. Kubernetes counts repeats of an event in count, so one
-- event is (name, count, creation time) on its hub.
CREATE TABLE event.local_policy_events (
    hub             text NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('root', 'replicated')),
    event_name      text NOT NULL,
    event_count     integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL,
    event_namespace text NOT NULL DEFAULT '',
    policy_id       text NOT NULL,
    cluster_name    text NOT NULL DEFAULT '',
    cluster_id      text NOT NULL DEFAULT '',
    compliance      text NOT NULL DEFAULT '',
    reason          text NOT NULL DEFAULT '',
    message         text NOT NULL DEFAULT '',
    payload         jsonb NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hub, kind, event_name, event_count, created_at)
);

---- create above / drop below ----

DROP TABLE event.local_policy_events;
DROP TABLE event.managed_cluster_events;
DROP TABLE status.hub_info;
DELETE FROM status.compliance WHERE compliance = 'pending';
ALTER TABLE status.compliance DROP CONSTRAINT IF EXISTS compliance_compliance_check;
ALTER TABLE status.compliance ADD CONSTRAINT compliance_compliance_check
    CHECK (compliance IN ('compliant', 'non_compliant', 'unknown'));
